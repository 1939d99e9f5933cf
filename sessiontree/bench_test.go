package sessiontree_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

var benchMsg = msg(assistantMsg, "a typical answer of a few words, with some more text to look like a real turn", "anthropic", "claude")

func BenchmarkAppend(b *testing.B) {
	tr, err := sessiontree.New(sessiontree.Config{Root: b.TempDir()}, who, "a", "s", sessiontree.HeaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMsg)))
	for b.Loop() {
		if _, err := tr.AppendMessage(benchMsg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFlush(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			tr, err := sessiontree.New(sessiontree.Config{Root: b.TempDir(), Uploader: &discard{}}, who, "a", "s", sessiontree.HeaderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range n {
					if _, err := tr.AppendMessage(benchMsg); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := tr.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlainJSONLAppend is the baseline: what Pi does per entry (open,
// write one line, fsync, close).
func BenchmarkPlainJSONLAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	line := append([]byte(`{"type":"message","id":"0123abcd","parentId":"0123abce","timestamp":"2026-09-25T22:00:00.000Z","message":`), benchMsg...)
	line = append(line, "}\n"...)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{ storesOnUpload }

func (discard) Upload(context.Context, sessiontree.Batch) error { return nil }

// bigSession writes a 100k-entry session (one long path) and returns its config.
func bigSession(b *testing.B, n int) (sessiontree.Config, int64) {
	b.Helper()
	cfg := sessiontree.Config{Root: b.TempDir(), NoSync: true}
	tr, err := sessiontree.New(cfg, who, "a", "big", sessiontree.HeaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		m := benchMsg
		if i%2 == 0 {
			m = msg(userMsg, fmt.Sprintf("question %d", i))
		}
		if _, err := tr.AppendMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	if err := tr.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(tr.ContextPath())
	if err != nil {
		b.Fatal(err)
	}
	return cfg, st.Size()
}

func BenchmarkLoad100k(b *testing.B) {
	cfg, size := bigSession(b, 100_000)
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		tr, _, err := sessiontree.Load(context.Background(), cfg, who, "a", "big")
		if err != nil || tr.Len() != 100_000 {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildContext100k(b *testing.B) {
	cfg, _ := bigSession(b, 100_000)
	tr, _, err := sessiontree.Load(context.Background(), cfg, who, "a", "big")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := tr.BuildContext()
		if len(c.Messages) != 100_000 {
			b.Fatal(len(c.Messages))
		}
	}
}

// BenchmarkBuildContext100kPi16 is BenchmarkBuildContext100k with what Pi 1.6
// added on the path: a system message every 1,000 entries and a context edit
// of the message before it every 100 (a tenth of them removing it), which
// make the context build look into messages and edits.
func BenchmarkBuildContext100kPi16(b *testing.B) {
	tr, err := sessiontree.New(sessiontree.Config{Root: b.TempDir(), NoSync: true}, who, "a", "big", sessiontree.HeaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	edits := 0
	for i := range 100_000 {
		var err error
		var e sessiontree.Entry
		switch {
		case i%1000 == 0:
			e, err = tr.AppendMessage(json.RawMessage(`{"role":"system","content":"be brief","timestamp":1}`))
		case i%2 == 0:
			e, err = tr.AppendMessage(msg(userMsg, fmt.Sprintf("question %d", i)))
		default:
			e, err = tr.AppendMessage(benchMsg)
		}
		if err == nil && i%100 == 99 {
			repl := json.RawMessage(`{"content":"edited"}`)
			if edits++; edits%10 == 0 {
				repl = json.RawMessage(`null`)
			}
			_, err = tr.AppendContextEdit(e.ID(), repl)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	want := len(tr.BuildContext().Messages)
	b.ReportAllocs()
	for b.Loop() {
		if c := tr.BuildContext(); len(c.Messages) != want {
			b.Fatal(len(c.Messages))
		}
	}
}

var _ = bytes.Equal

// BenchmarkPullTurn: a replica of a session of n entries pulls one new entry
// and flushes, as a turn does: the cost of ordering the whole set again
// (canonical order) and of rewriting the segments file with every origin.
func BenchmarkPullTurn(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			w, err := transcript.NewWriter("writer")
			if err != nil {
				b.Fatal(err)
			}
			ref, err := who.Ref("a", "turns")
			if err != nil {
				b.Fatal(err)
			}
			entry := func(i int) []byte {
				parent := "null"
				if i > 0 {
					parent = fmt.Sprintf(`"e%07d"`, i-1)
				}
				return fmt.Appendf(nil, `{"type":"message","id":"e%07d","parentId":%s,"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"turn %d","timestamp":1}}`, i, parent, i)
			}
			batch := [][]byte{pi.NewHeader("turns", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), "/", "").Raw()}
			for i := range n {
				batch = append(batch, entry(i))
			}
			if _, err := store.AppendSegments(ctx, ref, batch, w); err != nil {
				b.Fatal(err)
			}
			cfg := sessiontree.Config{Root: b.TempDir(), Store: store, NoSync: true}
			tr, _, err := sessiontree.Open(ctx, cfg, who, "a", "turns", sessiontree.HeaderOptions{})
			if err != nil || tr.Len() != n {
				b.Fatal(err, tr.Len())
			}
			if err := tr.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			i := n
			for b.Loop() {
				if _, err := store.AppendSegment(ctx, ref, [][]byte{entry(i)}, w); err != nil {
					b.Fatal(err)
				}
				i++
				if _, err := tr.Pull(ctx); err != nil {
					b.Fatal(err)
				}
				if err := tr.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
