package sessiontree_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// Example follows one session across two agent replicas that share a store, as
// replicas behind a load balancer do: each has its own local files, hands what
// it flushes to an uploader (mirror.Direct here, the asynchronous mirror.Mirror
// in production) and reads what the others stored through Config.Store.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sessiontree-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	replica := func(name string) sessiontree.Config {
		w, err := transcript.NewWriter(name)
		if err != nil {
			log.Fatal(err)
		}
		return sessiontree.Config{Root: filepath.Join(dir, name),
			Uploader: &mirror.Direct{Store: store, Writer: w}, Store: store}
	}
	who := sessiontree.Identity{Namespace: "acme", UserID: "alice"}

	// The first turn lands on replica A: Open finds the session nowhere and starts it.
	a, _, err := sessiontree.Open(ctx, replica("a"), who, "coder", "s1", sessiontree.HeaderOptions{Cwd: "/work"})
	if err != nil {
		log.Fatal(err)
	}
	appendTurn(a, "What does this repository do?", "It stores agent sessions in a bucket.")
	if err := a.Flush(ctx); err != nil { // after each assistant message
		log.Fatal(err)
	}

	// The next turn lands on replica B, which has no local files: Open restores the
	// session from the store and the turn continues A's conversation.
	b, _, err := sessiontree.Open(ctx, replica("b"), who, "coder", "s1", sessiontree.HeaderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	appendTurn(b, "How are the sessions stored?", "As immutable segments, union-merged on read.")
	if err := b.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	// Back on replica A, Pull brings in what B stored before the model is asked.
	rep, err := a.Pull(ctx)
	if err != nil {
		log.Fatal(err)
	}
	c := a.BuildContext()
	fmt.Println(a.Ref())
	fmt.Println("pulled:", rep.Added, "entries")
	fmt.Println("context:", len(c.Messages), "messages, model", c.Model.ModelID)
	// Output:
	// acme/coder/s1
	// pulled: 2 entries
	// context: 4 messages, model gpt-4o
}

// appendTurn appends a user message and the assistant's answer.
func appendTurn(t *sessiontree.Tree, question, answer string) {
	user, _ := json.Marshal(map[string]any{"role": "user", "content": question, "timestamp": 1790375350000})
	reply, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]string{"type": "text", "text": answer}},
		"provider": "openai", "model": "gpt-4o", "stopReason": "stop", "timestamp": 1790375352000})
	for _, m := range [][]byte{user, reply} {
		if _, err := t.AppendMessage(m); err != nil {
			log.Fatal(err)
		}
	}
}

// printingUploader implements the Uploader port by printing what each Flush
// hands it. It stores nothing, so it holds nothing pending for Open to read,
// and it uploads the batch's entries, not the local files.
type printingUploader struct{}

func (printingUploader) Upload(_ context.Context, b sessiontree.Batch) error {
	types := make([]string, len(b.Entries))
	for i, raw := range b.Entries {
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		types[i] = e.Type
	}
	fmt.Printf("upload %s: %s\n", b.Ref, strings.Join(types, ", "))
	return nil
}

func (printingUploader) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

func (printingUploader) ReadsLocalFiles() bool { return false }

// Example_uploader shows what a Tree hands its Uploader: nothing before the first
// Flush (no file, no upload), then at each Flush exactly the entries created
// since the previous one, the session header first in the first batch.
func Example_uploader() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sessiontree-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := sessiontree.Config{Root: dir, Uploader: printingUploader{}}
	tree, err := sessiontree.New(cfg, sessiontree.Identity{Namespace: "acme"}, "coder", "s1", sessiontree.HeaderOptions{Cwd: "/work"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tree.AppendModelChange("openai", "gpt-4o"); err != nil {
		log.Fatal(err)
	}
	appendTurn(tree, "Hello?", "Hi.")
	_, statErr := os.Stat(tree.LogPath())
	fmt.Println("log file before the first flush:", !os.IsNotExist(statErr))
	if err := tree.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	appendTurn(tree, "Still there?", "Yes.")
	if err := tree.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	if err := tree.Flush(ctx); err != nil { // nothing new: no batch
		log.Fatal(err)
	}
	// Output:
	// log file before the first flush: false
	// upload acme/coder/s1: session, model_change, message, message
	// upload acme/coder/s1: message, message
}

// ExampleFilesOf prints the local layout of a session, relative to the root.
func ExampleFilesOf() {
	f := sessiontree.FilesOf("", transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"})
	fmt.Println(filepath.ToSlash(f.Context))
	fmt.Println(filepath.ToSlash(f.Log))
	fmt.Println(filepath.ToSlash(f.Segments))
	// Output:
	// acme/agents/coder/sessions/s1.jsonl
	// acme/agents/coder/sessions/s1.log.jsonl
	// acme/agents/coder/sessions/s1.segments
}
