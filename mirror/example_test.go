package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// Example wires one agent replica: a store opened from a URL, one Mirror shared by
// every session of the process, and a SessionTree bound to the caller's tenant. The
// turn never waits on object storage: Flush returns once the segment is in the
// outbox, and the Mirror uploads it in the background.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "transcript-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// In production: s3://BUCKET/PREFIX?endpoint=HOST:PORT (credentials from the env).
	b, prefix, err := bucketurl.Open(ctx, "file://"+filepath.Join(dir, "bucket"))
	if err != nil {
		log.Fatal(err)
	}
	store, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// One Mirror per process; its outbox lives on the replica's persistent volume.
	m, err := mirror.New(mirror.Config{Store: store, Writer: transcript.NewRandomWriter(),
		OutboxDir: filepath.Join(dir, "outbox")})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(ctx)

	tree, err := sessiontree.New(sessiontree.Config{Root: filepath.Join(dir, "local"), Uploader: m},
		sessiontree.Identity{Namespace: "tenant-a", UserID: "alice"}, "coder", "session-1",
		sessiontree.HeaderOptions{Cwd: "/work"})
	if err != nil {
		log.Fatal(err)
	}
	user, _ := json.Marshal(map[string]any{"role": "user", "content": "hello", "timestamp": 1790375350000})
	answer, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]string{"type": "text", "text": "hi"}},
		"provider": "openai", "model": "gpt-4o", "stopReason": "stop", "timestamp": 1790375352000})
	if _, err := tree.AppendMessage(user); err != nil {
		log.Fatal(err)
	}
	if _, err := tree.AppendMessage(answer); err != nil {
		log.Fatal(err)
	}
	// The runtime flushes after each assistant message; the first flush creates the files.
	if err := tree.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Tests and shutdown hooks can wait for the uploads.
	if err := m.AwaitQuiescence(ctx); err != nil {
		log.Fatal(err)
	}

	res, err := store.ReadAll(ctx, tree.Ref())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tree.Ref(), len(res.Segments), "segment,", len(res.Entries), "entries (header included)")
	fmt.Println(tree.BuildContext().Model.ModelID)
	// Output:
	// tenant-a/coder/session-1 1 segment, 3 entries (header included)
	// gpt-4o
}
