package buckettest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

func (s suite) cancelledContext(t *testing.T, b bucket.Bucket) {
	put(t, b, "c/present", []byte("here"))
	ctx := cancelled(t)
	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error {
			rc, _, err := b.Get(ctx, "c/present")
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"Stat", func() error { _, err := b.Stat(ctx, "c/present"); return err }},
		{"List", func() error {
			return b.List(ctx, bucket.ListOptions{}, func(bucket.ObjectInfo) error { return nil })
		}},
		{"Put", func() error {
			return b.Put(ctx, "c/new", strings.NewReader("new"), 3, bucket.PutOptions{Checksum: "x"})
		}},
		{"Delete", func() error { return b.Delete(ctx, "c/present") }},
		{"GetRange", func() error { _, err := b.GetRange(ctx, "c/present", 0, 2); return err }},
		{"Replace", func() error {
			return b.Replace(ctx, "c/present", strings.NewReader("new"), 3, bucket.PutOptions{Checksum: "x"})
		}},
		{"DeleteBatch", func() error { return b.DeleteBatch(ctx, []string{"c/present"}) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.call(), context.Canceled)
		})
	}
	requireAbsent(t, b, "c/new")
	require.Equal(t, []byte("here"), get(t, b, "c/present"), "a cancelled delete or replace must not change the object")

	t.Run("during Put", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		r := &cancellingReader{r: bytes.NewReader(data), after: len(data) / 2, cancel: cancel, done: ctx.Done()}
		err := b.Put(ctx, "c/mid", r, int64(len(data)), bucket.PutOptions{Checksum: sum(data)})
		require.ErrorIs(t, err, context.Canceled)
		requireAbsent(t, b, "c/mid")
	})
}

// cancellingReader cancels its context once it has returned after bytes, waits until
// the cancellation is visible, and then goes on returning data.
type cancellingReader struct {
	r      io.Reader
	after  int
	n      int
	cancel context.CancelFunc
	done   <-chan struct{}
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.n >= c.after {
		c.cancel()
		<-c.done
	} else if len(p) > c.after-c.n {
		p = p[:c.after-c.n]
	}
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (s suite) failingReader(t *testing.T, b bucket.Bucket) {
	small := bytes.Repeat([]byte("transcript "), 100)
	large := bytes.Repeat([]byte("segment bytes, "), 200<<10) // 3 MiB
	tests := []struct {
		name      string
		data      []byte
		failAfter int
		size      int64
	}{
		{"at once known size", small, 0, int64(len(small))},
		{"half way known size", small, len(small) / 2, int64(len(small))},
		{"half way unknown size", small, len(small) / 2, -1},
		{"large half way known size", large, len(large) / 2, int64(len(large))},
		{"large half way unknown size", large, len(large) / 2, -1},
		{"last byte known size", small, len(small) - 1, int64(len(small))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "f/" + strings.ReplaceAll(tt.name, " ", "-")
			err := b.Put(t.Context(), key, FailingReader(tt.data, tt.failAfter), tt.size,
				bucket.PutOptions{Checksum: sum(tt.data)})
			require.Error(t, err)
			requireAbsent(t, b, key)
			// The key is still free: the full write succeeds afterwards.
			put(t, b, key, tt.data)
			require.Equal(t, len(tt.data), len(get(t, b, key)))
		})
	}
	require.Len(t, list(t, b, bucket.ListOptions{Prefix: "f/"}), len(tests))
}

func (s suite) shortReader(t *testing.T, b bucket.Bucket) {
	data := []byte("twenty bytes of data")
	tests := []struct {
		name string
		data []byte
		size int64
	}{
		{"ten bytes short", data, int64(len(data)) + 10},
		{"one byte short", data, int64(len(data)) + 1},
		{"empty reader", nil, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "s/" + strings.ReplaceAll(tt.name, " ", "-")
			// io.MultiReader hides Seek and ReadAt, as a network stream would.
			r := io.MultiReader(bytes.NewReader(tt.data))
			err := b.Put(t.Context(), key, r, tt.size, bucket.PutOptions{Checksum: sum(tt.data)})
			require.Error(t, err)
			requireAbsent(t, b, key)
		})
	}
	t.Run("seekable reader", func(t *testing.T) {
		err := b.Put(t.Context(), "s/seekable", bytes.NewReader(data), int64(len(data))+3, bucket.PutOptions{})
		require.Error(t, err)
		requireAbsent(t, b, "s/seekable")
	})
	t.Run("longer reader keeps size bytes", func(t *testing.T) {
		err := b.Put(t.Context(), "s/longer", bytes.NewReader(data), 6, bucket.PutOptions{})
		require.NoError(t, err)
		require.Equal(t, data[:6], get(t, b, "s/longer"))
	})
	require.Equal(t, []string{"s/longer"}, list(t, b, bucket.ListOptions{}))
}
