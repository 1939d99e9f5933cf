package repository_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A runtime binds a repository to the authenticated owner, creates a strict
// session, appends with an expected head, and sees a stale append refused.
func Example() {
	ctx := context.Background()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	owner := repository.Owner{Tenant: "acme", User: "alice@acme.example"}
	repo, err := repository.New(store, owner, repository.Config{AgentID: "support-bot"})
	if err != nil {
		panic(err)
	}
	defer repo.Close()

	s, err := repo.Create(ctx, repository.CreateOptions{ID: "chat-1", Name: "Refund", Strict: true})
	if err != nil {
		panic(err)
	}
	first := []byte(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"hi"}}`)
	head := s.Head() // the session_info entry
	fmt.Println(s.AppendIf(ctx, head, first) == nil)
	fmt.Println(s.AppendIf(ctx, head, first) == nil) // a retry: idempotent

	stale := []byte(`{"type":"message","id":"a2","parentId":null,"timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"user","content":"again"}}`)
	err = s.AppendIf(ctx, head, stale)
	fmt.Println(errors.Is(err, transcript.ErrConflict), errors.Is(err, repository.ErrStaleHead))

	// Another owner cannot see the session at all.
	other, err := repository.New(store, repository.Owner{Tenant: "acme", User: "mallory"}, repository.Config{AgentID: "support-bot"})
	if err != nil {
		panic(err)
	}
	defer other.Close()
	_, err = other.Open(ctx, "chat-1")
	fmt.Println(errors.Is(err, bucket.ErrNotFound))

	list, err := repo.List(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(list[0].ID, list[0].Name, list[0].Entries, list[0].Leaf)
	// Output:
	// true
	// true
	// true true
	// true
	// chat-1 Refund 2 a1
}
