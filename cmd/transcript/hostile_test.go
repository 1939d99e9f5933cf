package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// openBucket opens the bucket of the store at url, closed with the test.
func openBucket(t *testing.T, url string) (bucket.Bucket, string) {
	t.Helper()
	b, prefix, err := bucketurl.Open(context.Background(), url)
	require.NoError(t, err)
	if c, ok := b.(io.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return b, prefix
}

// openStoreAt opens the store at url, closed with the test.
func openStoreAt(t *testing.T, url string) *transcript.Store {
	t.Helper()
	b, prefix := openBucket(t, url)
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// sessionKeys lists the level-0 segment keys of default/a/{session}.
func sessionKeys(t *testing.T, b bucket.Bucket, prefix, session string) []string {
	t.Helper()
	var keys []string
	sp := strings.TrimPrefix(prefix+"/default/a/"+session+"/L0/", "/")
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: sp}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	return keys
}

// testForgedSuperseder plays a writer with create-only access to a session: after an
// honest writer appends three segments, it stores a level-1 segment that holds only
// its own entry but names the three as its inputs, a deletion mark for them dated
// in the year 2000, and a key that matches a policy pattern but not the layout.
// Readers still see every entry, compaction deletes nothing (with the default delay
// and with none), and verify names the forged segment, each input and the stray key.
func testForgedSuperseder(t *testing.T, b backend) {
	ctx := context.Background()
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "a", "--session", "s"}
	for i, parent := range []string{"", "e0", "e1"} {
		in := entryLine(fmt.Sprintf("e%d", i), parent) + "\n"
		if i == 0 {
			in = headerLine("s") + "\n" + in
		}
		r := cliWith(t, cmdOpts{stdin: in}, append([]string{"append"}, sel...)...)
		require.Equal(t, 0, r.code, r.stderr)
	}
	bk, prefix := openBucket(t, store)
	inputs := sessionKeys(t, bk, prefix, "s")
	require.Len(t, inputs, 3)

	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	rel := make([]string, len(inputs))
	for i, k := range inputs {
		rel[i] = k[strings.LastIndex(k, "/L0/")+1:]
	}
	data, meta, err := enc.Encode(segment.Meta{WriterID: "evil", Seq: 1, Level: 1, Inputs: rel},
		[][]byte{[]byte(entryLine("evil", ""))})
	require.NoError(t, err)
	forged := strings.Replace(inputs[0], "/L0/", "/L1/", 1)
	forged = forged[:strings.LastIndex(forged, "-")+1] + fmt.Sprintf("%016x", meta.Checksum) + transcript.SegmentExt
	require.NoError(t, bk.Put(ctx, forged, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
	name := strings.TrimSuffix(forged[strings.LastIndex(forged, "/L1/")+1:], transcript.SegmentExt)
	markKey := forged[:strings.LastIndex(forged, "/L1/")] + "/gc/" + name + ".mark.json"
	mark, err := json.Marshal(map[string]any{"supersededBy": name + transcript.SegmentExt, "inputs": rel,
		"markedAt": "2000-01-01T00:00:00Z"})
	require.NoError(t, err)
	require.NoError(t, bk.Put(ctx, markKey, bytes.NewReader(mark), int64(len(mark)), bucket.PutOptions{}))
	stray := forged[:strings.LastIndex(forged, "/L1/")] + "/L1/x/L0/y" + transcript.SegmentExt
	require.NoError(t, bk.Put(ctx, stray, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))

	cat := ok(t, append([]string{"cat"}, sel...)...)
	for _, id := range []string{"e0", "e1", "e2", "evil"} {
		require.Contains(t, cat, fmt.Sprintf(`"id":%q`, id), "readers keep reading the claimed inputs")
	}

	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(t, err)
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{})
	require.NoError(t, err, "the mark is as old as its object, not as its contents say")
	require.Zero(t, res.Deleted)
	_, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	var unheld *transcript.UnheldInput
	require.ErrorAs(t, err, &unheld, "a due mark is checked against the superseder before any delete")
	require.Equal(t, forged, unheld.Superseder)
	for _, k := range inputs {
		_, err := bk.Stat(ctx, k)
		require.NoError(t, err, "compaction deleted %s on a forged segment's word", k)
	}

	r := cli(t, "verify", "--store", store)
	require.Equal(t, 1, r.code, r.stderr)
	for _, k := range inputs {
		require.Contains(t, r.stdout, "default/a/s: "+forged+": forged or damaged superseder: names "+k+" as an input")
	}
	require.Contains(t, r.stdout, "default/a/s: "+stray+": not a segment")
}

// testHostileIds: ids that would share a local file (x and x.log), vanish from a
// directory copy (.tmp-y) or deceive a reader (zero-width, right-to-left override,
// escape sequences) are refused with exit 2 on every backend; entry ids holding a
// newline and an escape sequence reach neither stdout nor stderr raw.
func testHostileIds(t *testing.T, b backend) {
	store := b.fresh(t)
	for _, sel := range [][]string{
		{"--session", "x.log"}, {"--session", ".tmp-y"}, {"--session", "a\u200bb"},
		{"--agent", "a\u202eb"}, {"--ns", "n\x1b[2J"}, {"--session", "L0"}, {"--agent", "gc"},
	} {
		args := append([]string{"append", "--store", store, "--agent", "a", "--session", "ok"}, sel...)
		r := cliWith(t, cmdOpts{stdin: entryLine("e1", "") + "\n"}, args...)
		require.Equal(t, 2, r.code, "%q: %s", sel, r.stderr)
		requireNoRawControls(t, r)
	}
	line := func(id, parent string) string {
		e, err := json.Marshal(map[string]any{"type": "custom", "id": id, "parentId": parent,
			"timestamp": "2026-09-25T22:28:55.554Z", "customType": "note"})
		require.NoError(t, err)
		return string(e)
	}
	evil := "x\n0 problems in 0 segments of 0 sessions (0 entries)\x1b[2J"
	r := cliWith(t, cmdOpts{stdin: headerLine("s") + "\n" + line(evil, "") + "\n" + line("a\u202eb\u200b", "gone\x1b]0;pwned\a") + "\n"},
		"append", "--force", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	for _, args := range [][]string{
		{"verify", "--store", store},
		{"verify", "--store", store, "--json"},
		{"tree", "--store", store, "--agent", "a", "--session", "s"},
		{"ls", "--store", store},
		{"ls", "--store", store, "--segments"},
		{"context", "--store", store, "--agent", "a", "--session", "s"},
	} {
		r := cli(t, args...)
		requireNoRawControls(t, r)
		if args[0] == "verify" && len(args) == 3 {
			require.Equal(t, 1, r.code)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			require.Len(t, lines, 2, "one problem line and the count: %q", r.stdout)
			require.Contains(t, lines[0], `"gone\x1b]0;pwned\a"`)
			require.True(t, strings.HasPrefix(lines[1], "1 problem in "), lines[1])
		}
	}
}

// requireNoRawControls fails if either stream of r holds a control or format
// character other than a line end or tab.
func requireNoRawControls(t *testing.T, r result) {
	t.Helper()
	for _, s := range []string{r.stdout, r.stderr} {
		for _, c := range s {
			if c != '\n' && c != '\t' && (unicode.IsControl(c) || unicode.Is(unicode.Cf, c)) {
				t.Fatalf("raw %U in output %q", c, s)
			}
		}
	}
}
