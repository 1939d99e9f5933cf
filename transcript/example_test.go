package transcript_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// Two writers append to one session, each in segments of its own; a reader gets
// the union of their entries, parents first, and later only what is new.
func Example() {
	ctx := context.Background()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	alice, _ := transcript.NewWriter("alice")
	bob, _ := transcript.NewWriter("bob")

	store.AppendSegment(ctx, ref, [][]byte{
		[]byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`),
		[]byte(`{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi"}}`),
	}, alice)
	store.AppendSegment(ctx, ref, [][]byte{
		[]byte(`{"type":"message","id":"b1","parentId":"a1","message":{"role":"assistant","content":"hello"}}`),
	}, bob)

	res, err := store.ReadAll(ctx, ref)
	if err != nil {
		panic(err)
	}
	for _, e := range res.Entries {
		fmt.Printf("%s (parent %q)\n", e.ID, e.ParentID)
	}

	// A reader that keeps what it read asks only for what is new.
	inc, _ := store.ReadNew(ctx, ref, transcript.SegmentSet{})
	store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"a2","parentId":"b1"}`)}, alice)
	inc, _ = store.ReadNew(ctx, ref, inc.Have)
	fmt.Println("new:", len(inc.Entries), inc.Entries[0].ID)
	// Output:
	// s1 (parent "")
	// a1 (parent "")
	// b1 (parent "a1")
	// new: 1 a2
}

// A strict session's head moves only by a conditional write: of two writers
// committing from the same head, one wins and the other's segment is removed.
func ExampleStore_CommitSegment() {
	ctx := context.Background()
	store, _ := transcript.New(transcript.Config{Bucket: membucket.New()})
	defer store.Close()
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "strict"}
	w := transcript.NewRandomWriter()
	header := []byte(`{"type":"session","version":3,"id":"strict","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`)
	_, head, _ := store.CreateSession(ctx, ref, [][]byte{header}, w, transcript.CreateOptions{Strict: true})

	_, next, err := store.CommitSegment(ctx, ref, head, [][]byte{[]byte(`{"type":"message","id":"x","parentId":null}`)}, w, "x", nil)
	fmt.Println("first:", next.Entry, next.Version, err)
	_, _, err = store.CommitSegment(ctx, ref, head, [][]byte{[]byte(`{"type":"message","id":"y","parentId":null}`)}, w, "y", nil)
	fmt.Println("second from the same head is a conflict:", errors.Is(err, transcript.ErrConflict))

	stored, _ := store.ReadHead(ctx, ref)
	res, _ := store.View(stored.Committed()).ReadAll(ctx, ref)
	fmt.Println("committed entries:", len(res.Entries), "head:", stored.Entry)
	// Output:
	// first: x 2 <nil>
	// second from the same head is a conflict: true
	// committed entries: 2 head: x
}
