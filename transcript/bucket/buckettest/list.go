package buckettest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// listKeys are stored in this order of creation (not sorted) by the listing cases.
// They mix lengths and separators so that byte order of full keys differs from
// element-wise order: "a-b" < "a.b" < "a/b/c" < "a/b0" < "a/ba" ('-' < '.' < '/' < '0').
var listKeys = []string{
	"a/ba", "a/b/c", "b", "a-b", "a/b/d/e", "a/b0", "c/x/y", "a.b", "a/b/c0", "ab", "c/z",
}

func (s suite) listLexical(t *testing.T, b bucket.Bucket) {
	for _, k := range listKeys {
		put(t, b, k, []byte(k))
	}
	tests := []struct {
		name string
		opts bucket.ListOptions
		want []string
	}{
		{"all", bucket.ListOptions{},
			[]string{"a-b", "a.b", "a/b/c", "a/b/c0", "a/b/d/e", "a/b0", "a/ba", "ab", "b", "c/x/y", "c/z"}},
		{"prefix a/", bucket.ListOptions{Prefix: "a/"},
			[]string{"a/b/c", "a/b/c0", "a/b/d/e", "a/b0", "a/ba"}},
		{"prefix a/b partial element", bucket.ListOptions{Prefix: "a/b"},
			[]string{"a/b/c", "a/b/c0", "a/b/d/e", "a/b0", "a/ba"}},
		{"prefix a/b/", bucket.ListOptions{Prefix: "a/b/"},
			[]string{"a/b/c", "a/b/c0", "a/b/d/e"}},
		{"prefix a", bucket.ListOptions{Prefix: "a"},
			[]string{"a-b", "a.b", "a/b/c", "a/b/c0", "a/b/d/e", "a/b0", "a/ba", "ab"}},
		{"prefix matches nothing", bucket.ListOptions{Prefix: "zz"}, []string{}},
		{"prefix is a whole key", bucket.ListOptions{Prefix: "a/b0"}, []string{"a/b0"}},
		{"start after a missing key", bucket.ListOptions{StartAfter: "a/b/c/"},
			[]string{"a/b/c0", "a/b/d/e", "a/b0", "a/ba", "ab", "b", "c/x/y", "c/z"}},
		{"start after an existing key", bucket.ListOptions{StartAfter: "a/b/c"},
			[]string{"a/b/c0", "a/b/d/e", "a/b0", "a/ba", "ab", "b", "c/x/y", "c/z"}},
		{"start after a directory name", bucket.ListOptions{StartAfter: "a/b/"},
			[]string{"a/b/c", "a/b/c0", "a/b/d/e", "a/b0", "a/ba", "ab", "b", "c/x/y", "c/z"}},
		{"start after with prefix", bucket.ListOptions{Prefix: "a/", StartAfter: "a/b/d"},
			[]string{"a/b/d/e", "a/b0", "a/ba"}},
		{"start after before prefix", bucket.ListOptions{Prefix: "c/", StartAfter: "a"},
			[]string{"c/x/y", "c/z"}},
		{"start after beyond prefix", bucket.ListOptions{Prefix: "a/", StartAfter: "b"}, []string{}},
		{"start after the last key", bucket.ListOptions{StartAfter: "c/z"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, list(t, b, tt.opts))
		})
	}
	// A first page asked for changes the requests, never the keys: whether it
	// holds one key, some, all but one, all of them or more, and with the
	// listing's other options.
	t.Run("first page", func(t *testing.T) {
		for _, tt := range tests {
			for _, first := range []int{1, 2, 3, len(tt.want) - 1, len(tt.want), len(tt.want) + 1} {
				if first <= 0 {
					continue
				}
				opts := tt.opts
				opts.FirstPage = first
				require.Equal(t, tt.want, list(t, b, opts), "%s, first page %d", tt.name, first)
			}
		}
	})
	t.Run("object info", func(t *testing.T) {
		err := b.List(t.Context(), bucket.ListOptions{Prefix: "a/b0"}, func(oi bucket.ObjectInfo) error {
			require.Equal(t, "a/b0", oi.Key)
			require.Equal(t, int64(len("a/b0")), oi.Size)
			require.False(t, oi.IsPrefix)
			require.False(t, oi.ModTime.IsZero())
			return nil
		})
		require.NoError(t, err)
	})
}

func (s suite) listDelimited(t *testing.T, b bucket.Bucket) {
	for _, k := range listKeys {
		put(t, b, k, []byte(k))
	}
	tests := []struct {
		name string
		opts bucket.ListOptions
		want []string
	}{
		{"root", bucket.ListOptions{Delimited: true},
			[]string{"a-b", "a.b", "a/", "ab", "b", "c/"}},
		{"prefix a/", bucket.ListOptions{Prefix: "a/", Delimited: true},
			[]string{"a/b/", "a/b0", "a/ba"}},
		{"prefix a/b partial element", bucket.ListOptions{Prefix: "a/b", Delimited: true},
			[]string{"a/b/", "a/b0", "a/ba"}},
		{"prefix a/b/", bucket.ListOptions{Prefix: "a/b/", Delimited: true},
			[]string{"a/b/c", "a/b/c0", "a/b/d/"}},
		{"prefix c/", bucket.ListOptions{Prefix: "c/", Delimited: true},
			[]string{"c/x/", "c/z"}},
		{"start after a key", bucket.ListOptions{StartAfter: "ab", Delimited: true},
			[]string{"b", "c/"}},
		{"start after with prefix", bucket.ListOptions{Prefix: "a/", StartAfter: "a/b0", Delimited: true},
			[]string{"a/ba"}},
		{"start after a common prefix", bucket.ListOptions{StartAfter: "a/", Delimited: true},
			[]string{"ab", "b", "c/"}},
		{"start after a key inside a common prefix", bucket.ListOptions{StartAfter: "a/b/c", Delimited: true},
			[]string{"ab", "b", "c/"}},
		{"start after inside a prefix with prefix", bucket.ListOptions{Prefix: "a/", StartAfter: "a/b/c", Delimited: true},
			[]string{"a/b0", "a/ba"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := b.List(t.Context(), tt.opts, func(oi bucket.ObjectInfo) error {
				got = append(got, oi.Key)
				isPrefix := oi.Key[len(oi.Key)-1] == '/'
				require.Equal(t, isPrefix, oi.IsPrefix, "IsPrefix of %s", oi.Key)
				if isPrefix {
					require.Zero(t, oi.Size, "size of prefix %s", oi.Key)
				}
				return nil
			})
			require.NoError(t, err)
			if len(tt.want) == 0 {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// listFileAndDirectory checks keys that are both an object and a prefix of other
// keys ("a/b" and "a/b/c"), which object stores allow and file systems do not.
func (s suite) listFileAndDirectory(t *testing.T, b bucket.Bucket) {
	if s.opts.FileDirConflict {
		t.Skip("backend cannot hold a key that is also a prefix of another key")
	}
	for _, k := range []string{"a/ba", "a/b/c", "a/b", "a/b-c", "a"} {
		put(t, b, k, []byte(k))
	}
	require.Equal(t, []string{"a", "a/b", "a/b-c", "a/b/c", "a/ba"}, list(t, b, bucket.ListOptions{}))
	require.Equal(t, []string{"a/b", "a/b-c", "a/b/c", "a/ba"}, list(t, b, bucket.ListOptions{Prefix: "a/b"}))
	require.Equal(t, []string{"a/b-c", "a/b/c", "a/ba"}, list(t, b, bucket.ListOptions{StartAfter: "a/b"}))
	require.Equal(t, []string{"a", "a/"}, list(t, b, bucket.ListOptions{Delimited: true}))
	require.Equal(t, []string{"a/b", "a/b-c", "a/b/", "a/ba"},
		list(t, b, bucket.ListOptions{Prefix: "a/", Delimited: true}))
}

func (s suite) listCallbackError(t *testing.T, b bucket.Bucket) {
	for _, k := range []string{"e/1", "e/2", "e/3"} {
		put(t, b, k, []byte(k))
	}
	stop := errors.New("stop here")
	// With a first page of one key the error comes in the second page; of two,
	// at the end of the first.
	for _, first := range []int{0, 1, 2} {
		var seen []string
		err := b.List(t.Context(), bucket.ListOptions{FirstPage: first}, func(oi bucket.ObjectInfo) error {
			seen = append(seen, oi.Key)
			if len(seen) == 2 {
				return stop
			}
			return nil
		})
		require.ErrorIs(t, err, stop, "first page %d", first)
		require.Equal(t, []string{"e/1", "e/2"}, seen, "first page %d", first)
	}
}
