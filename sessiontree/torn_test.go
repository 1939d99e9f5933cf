package sessiontree_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
)

// TestLoad_TornWrites damages a flushed context file and checks exactly what
// survives, that nothing before the damage is lost, and that appending afterwards
// works without fusing entries.
func TestLoad_TornWrites(t *testing.T) {
	const n = 10
	tests := []struct {
		name      string
		damage    func(b []byte) []byte
		survivors int
		torn      bool
		malformed int
	}{
		{"intact", func(b []byte) []byte { return b }, n, false, 0},
		{"truncate 1 byte (newline only)", func(b []byte) []byte { return b[:len(b)-1] }, n, false, 0},
		{"truncate 2 bytes", func(b []byte) []byte { return b[:len(b)-2] }, n - 1, true, 0},
		{"truncate 40 bytes", func(b []byte) []byte { return b[:len(b)-40] }, n - 1, true, 0},
		{"tear last line in half", func(b []byte) []byte {
			last := bytes.LastIndexByte(b[:len(b)-1], '\n')
			return b[:last+1+(len(b)-last)/2]
		}, n - 1, true, 0},
		{"zero the middle", func(b []byte) []byte {
			c := bytes.Clone(b)
			mid := len(c) / 2
			for i := mid; i < mid+20; i++ {
				if c[i] != '\n' {
					c[i] = 0
				}
			}
			return c
		}, n, false, 1}, // the damaged entry is reported, and recovered from the intact log
		{"garbage line appended", func(b []byte) []byte { return append(bytes.Clone(b), "garbage{{\n"...) }, n, false, 1},
		{"absurd line", func(b []byte) []byte {
			return append(bytes.Clone(b), append(bytes.Repeat([]byte("x"), sessiontree.MaxLineBytes+1), '\n')...)
		}, n, false, 1},
		{"torn garbage tail", func(b []byte) []byte { return append(bytes.Clone(b), `{"type":"message","id":"zz`...) }, n, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t)
			cfg.NoSync = true
			tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			var want []string
			for i := range n {
				e, err := tr.AppendMessage(msg(userMsg, fmt.Sprintf("m%d", i)))
				require.NoError(t, err)
				want = append(want, e.ID())
			}
			require.NoError(t, tr.Flush(ctx))
			b, err := os.ReadFile(tr.ContextPath())
			require.NoError(t, err)
			damaged := tc.damage(b)
			require.NoError(t, os.WriteFile(tr.ContextPath(), damaged, 0o644))

			tr2, rep, err := sessiontree.Load(ctx, cfg, who, "a", "s")
			require.NoError(t, err)
			require.Equal(t, tc.survivors, tr2.Len())
			require.Equal(t, tc.torn, rep.TornBytes > 0)
			require.Len(t, rep.Malformed, tc.malformed)
			got := ids(tr2.Entries())
			if tc.malformed == 0 {
				require.Equal(t, want[:tc.survivors], got, "nothing before the damage is lost")
			}

			// Append after the damage: the new entry is a line of its own.
			ne, err := tr2.AppendMessage(msg(userMsg, "after"))
			require.NoError(t, err)
			require.NoError(t, tr2.Flush(ctx))
			// The torn tail the flush cut off is saved beside the file, not dropped.
			saved, err := os.ReadFile(tr.ContextPath() + sessiontree.TornSuffix)
			if tc.torn {
				require.NoError(t, err)
				tail := damaged[bytes.LastIndexByte(damaged, '\n')+1:]
				require.Equal(t, string(tail)+"\n", string(saved))
				require.Equal(t, rep.TornBytes, len(tail))
			} else {
				require.ErrorIs(t, err, os.ErrNotExist)
			}
			tr3, rep3, err := sessiontree.Load(ctx, cfg, who, "a", "s")
			require.NoError(t, err)
			require.Zero(t, rep3.TornBytes)
			require.False(t, rep3.MissingNewline)
			require.Equal(t, tc.survivors+1, tr3.Len())
			last := tr3.Entries()[tr3.Len()-1]
			require.Equal(t, string(ne.Raw()), string(last.Raw()))
		})
	}
}

func FuzzLoadJSONL(f *testing.F) {
	f.Add(readFixture(f, "pi-v3-browse-session.jsonl"))
	f.Add(readFixture(f, "pi-v1-prompt-cache-replay.jsonl"))
	f.Add([]byte("{\"type\":\"session\",\"version\":3,\"id\":\"x\"}\n{\"type\":\"m\",\"id\":\"a\",\"parentId\":\"a\"}\n{\"type\":\"leaf\",\"id\":\"b\",\"targetId\":\"b\"}"))
	f.Add([]byte("{\"type\":\"session\",\"id\":\"x\"}\n{\"type\":\"compaction\",\"firstKeptEntryIndex\":0}\n{}\n[]\n\"\\u0069d\"\n"))
	// Pi 1.6's entries, odd ones among them: edits of every kind of target and
	// replacement, messages without content, recorded system messages.
	f.Add([]byte(`{"type":"session","version":3,"id":"x"}
{"type":"message","id":"a","parentId":null,"message":{"role":"system"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":null,"1":2}}
{"type":"custom_message","id":"c","parentId":"b","customType":"n"}
{"type":"context_edit","id":"d","parentId":"c","targetId":"b","replacement":{"content":"x"}}
{"type":"context_edit","id":"e","parentId":"d","targetId":"c","replacement":7}
{"type":"compaction","id":"f","parentId":"e","firstKeptEntryId":"a","systemMessage":{"role":"user","content":[]}}
{"type":"context_edit","id":"g","parentId":"f","targetId":"f","replacement":{"content":"y"}}
{"type":"context_edit","id":"h","parentId":"g","targetId":"a"}
{"type":"usage","id":"i","parentId":"h"}
`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, es, rep, err := sessiontree.ParseSession(bytes.NewReader(data))
		if err != nil {
			return
		}
		_ = rep
		seen := map[string]bool{}
		for _, e := range es {
			if seen[e.ID()] {
				t.Fatalf("duplicate id %q", e.ID())
			}
			seen[e.ID()] = true
			if _, err := sessiontree.ParseEntry(e.Raw()); err != nil {
				t.Fatalf("kept entry does not re-parse: %v", err)
			}
		}
		c := sessiontree.BuildContextFrom(es, nil)
		if !json.Valid(c.JSON()) {
			t.Fatalf("context is not JSON: %s", c.JSON())
		}
		var w bytes.Buffer
		if err := sessiontree.WriteSession(&w, h, es); err != nil {
			t.Fatal(err)
		}
		// A written session re-reads to the same entries.
		h2, es2, rep2, err := sessiontree.ParseSession(&w)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !bytes.Equal(h.Raw(), h2.Raw()) || len(es) != len(es2) || !rep2.Clean() {
			t.Fatalf("re-read differs: %d vs %d entries, %+v", len(es), len(es2), rep2)
		}
	})
}

// A byte order mark before the header (an editor saved the file) is skipped as Pi
// skips it; one anywhere else makes its line malformed, as in Pi.
func TestParseSession_ByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	fixture := readFixture(t, "pi-v3-browse-session.jsonl")
	wantH, want, _, err := sessiontree.ParseSession(bytes.NewReader(fixture))
	require.NoError(t, err)
	lines := bytes.SplitAfter(fixture, []byte("\n"))
	secondAt := int64(len(lines[0]))
	for _, tt := range []struct {
		name      string
		data      []byte
		malformed []sessiontree.LineError // Line and Offset only
		entries   int
	}{
		{name: "before the header", data: append([]byte(bom), fixture...), entries: len(want)},
		{name: "one line, no newline", data: append([]byte(bom), bytes.TrimSuffix(lines[0], []byte("\n"))...)},
		{
			name:      "before an entry",
			data:      bytes.Join([][]byte{lines[0], []byte(bom), bytes.Join(lines[1:], nil)}, nil),
			malformed: []sessiontree.LineError{{Line: 2, Offset: secondAt}},
			entries:   len(want) - 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, es, rep, err := sessiontree.ParseSession(bytes.NewReader(tt.data))
			require.NoError(t, err)
			require.Equal(t, wantH.Raw(), h.Raw(), "the header's bytes, without the mark")
			require.Len(t, es, tt.entries)
			require.Len(t, rep.Malformed, len(tt.malformed))
			for i, m := range tt.malformed {
				require.Equal(t, m.Line, rep.Malformed[i].Line)
				require.Equal(t, m.Offset, rep.Malformed[i].Offset)
			}
			require.Zero(t, rep.TornBytes)
		})
	}
}

// A rewrite of the context file (after a compaction) replaces a file whose last
// line a crash tore: the torn bytes are saved to {file}.torn first, as an append
// saves them, never dropped unseen.
func TestFlush_RewriteSavesATornTail(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	tr, err := sessiontree.New(cfg, who, "agent", "torn-rewrite", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	first, err := tr.AppendMessage(msg(userMsg, "one"))
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(assistantMsg, "two", "p", "m"))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	const torn = `{"type":"message","id":"cut-sho`
	f, err := os.OpenFile(tr.ContextPath(), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(torn)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: first.ID(), TokensBefore: 3})
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	saved, err := os.ReadFile(tr.ContextPath() + sessiontree.TornSuffix)
	require.NoError(t, err, "the torn tail is saved")
	require.Equal(t, torn+"\n", string(saved))
	data, err := os.ReadFile(tr.ContextPath())
	require.NoError(t, err)
	require.NotContains(t, string(data), "cut-sho")
}
