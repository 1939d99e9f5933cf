package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

const demoUsage = `
Usage: transcript demo [flags]

Runs a short agent session the way a runtime would: appends entries to a SessionTree,
flushes after each assistant message (the first flush creates the local files), and
lets the asynchronous mirror upload each flush as one segment through its outbox.
Then it plays a second replica that has no local files: it restores the session from
the store alone and prints the context the model sees, which matches the first.

Examples:
  transcript demo
  transcript demo --store mem://
  transcript demo --store 's3://demo?endpoint=127.0.0.1:9000&insecure=true&create=true'
`

func runDemo(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "demo", demoUsage)
	root := fs.String("root", defaultRoot, "directory of the local session files")
	outbox := fs.String("outbox", "./transcript-data/outbox", "directory of the mirror's outbox")
	agent := fs.String("agent", "demo-agent", "agent id")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("demo takes no arguments")
	}
	s, err := sf.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := mirror.New(mirror.Config{Store: s, Writer: transcript.NewRandomWriter(), OutboxDir: *outbox})
	if err != nil {
		return err
	}
	defer m.Close(context.Background())

	rc := sessiontree.RuntimeContext{Namespace: sf.namespace, UserID: "demo-user"}
	sessionID := "demo-" + time.Now().UTC().Format("20060102T150405.000")
	cwd, _ := os.Getwd()
	tree, err := sessiontree.New(sessiontree.Config{Root: *root, Uploader: m}, rc, *agent, sessionID,
		sessiontree.HeaderOptions{Cwd: cwd})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "session %s\n", tree.Ref())

	msg := func(role, text string) json.RawMessage {
		m := map[string]any{"role": role, "timestamp": time.Now().UnixMilli()}
		if role == "assistant" {
			m["content"] = []map[string]any{{"type": "text", "text": text}}
			m["api"], m["provider"], m["model"], m["stopReason"] = "openai-completions", "openai", "gpt-4o", "stop"
			m["usage"] = map[string]int{"input": 100, "output": 20}
		} else {
			m["content"] = text
		}
		b, _ := json.Marshal(m)
		return b
	}
	turns := []struct{ user, assistant string }{
		{"Review the parser behaviour.", "The parser trims whitespace before processing."},
		{"Now compare it with the CLI input handling.", "The CLI passes raw input to the same parser."},
		{"Summarise the difference.", "Both paths trim; only the CLI also lower-cases flags."},
	}
	if _, err := tree.AppendModelChange("openai", "gpt-4o"); err != nil {
		return err
	}
	if _, err := tree.AppendThinkingLevelChange("low"); err != nil {
		return err
	}
	for i, turn := range turns {
		if _, err := tree.AppendMessage(msg("user", turn.user)); err != nil {
			return err
		}
		if i == 0 {
			if _, err := os.Stat(tree.LogPath()); err == nil {
				return fmt.Errorf("demo: a local file exists before the first assistant message")
			}
			fmt.Fprintf(env.stdout, "before the first answer: no local file, no segment (deferred persistence)\n")
		}
		if _, err := tree.AppendMessage(msg("assistant", turn.assistant)); err != nil {
			return err
		}
		if err := tree.Flush(ctx); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "turn %d flushed: %d entries\n", i+1, tree.Len())
	}
	if err := m.AwaitQuiescence(ctx); err != nil {
		return err
	}
	st := m.Status()
	fmt.Fprintf(env.stdout, "mirror: %d segments uploaded (%d bytes), %d pending\n", st.Uploaded, st.UploadedBytes, st.Pending)

	segs, err := s.ListSegments(ctx, tree.Ref())
	if err != nil {
		return err
	}
	for _, seg := range segs {
		fmt.Fprintf(env.stdout, "  %s (%d bytes)\n", seg.Key, seg.Size)
	}

	// A second replica with no local files restores the session from the store alone.
	replicaRoot, err := os.MkdirTemp("", "transcript-demo-replica-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(replicaRoot)
	replica, err := restoreTree(ctx, s, tree.Ref(), replicaRoot)
	if err != nil {
		return err
	}
	want, got := tree.BuildContext().JSON(), replica.BuildContext().JSON()
	if string(want) != string(got) {
		return fmt.Errorf("demo: the restored replica builds another context:\n%s\n%s", got, want)
	}
	fmt.Fprintf(env.stdout, "replica restored %d entries from %d segments; its context matches\n", replica.Len(), len(segs))
	fmt.Fprintf(env.stdout, "local files: %s\n             %s\n", tree.ContextPath(), tree.LogPath())
	fmt.Fprintf(env.stdout, "context:\n")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "%s\n", pretty.Bytes())
	abs, _ := filepath.Abs(*root)
	fmt.Fprintf(env.stdout, "try: go run ./cmd/transcript cat %s   (local files under %s)\n", tree.Ref(), abs)
	return nil
}
