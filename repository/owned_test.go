package repository_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// AppendOwned answers every batch as Append (default mode) and AppendIf (strict
// mode) do, naming the same entry, and stores the same entries; it keeps the
// caller's bytes instead of a copy of them (BenchmarkServer_Append shows the
// allocations spared).
func TestSession_AppendOwnedAnswersAsAppend(t *testing.T) {
	batches := []struct {
		name    string
		entries [][]byte
	}{
		{"valid", [][]byte{msg("a", "", "one"), msg("b", "a", "two")}},
		{"not JSON", [][]byte{msg("a", "", "one"), []byte(`{"type":`)}},
		{"a header", [][]byte{[]byte(`{"type":"session","id":"h","version":3,"timestamp":"2026-03-01T12:00:00.000Z","cwd":"/"}`)}},
		{"the same id twice with other bytes", [][]byte{msg("a", "", "one"), msg("a", "", "other")}},
		{"an unknown parent", [][]byte{msg("a", "", "one"), msg("b", "nobody", "two")}},
		{"a retry of a stored entry", [][]byte{msg("s", "", "stored")}},
		{"a stored id with other bytes", [][]byte{msg("s", "", "changed")}},
		{"too large", [][]byte{msg("a", "", strings.Repeat("x", 2<<20))}},
	}
	for _, strict := range []bool{false, true} {
		for _, b := range batches {
			t.Run(fmt.Sprintf("strict=%v/%s", strict, b.name), func(t *testing.T) {
				e := newEnv(t, membucket.New())
				r := e.repo(alice)
				ctx := t.Context()
				run := func(id string, appendFn func(s *repository.Session, entries [][]byte) error) (error, []string) {
					s, err := r.Create(ctx, repository.CreateOptions{ID: id, Strict: strict})
					require.NoError(t, err)
					require.NoError(t, s.Append(ctx, msg("s", "", "stored")))
					entries := make([][]byte, len(b.entries))
					for i, raw := range b.entries {
						entries[i] = bytes.Clone(raw)
					}
					err = appendFn(s, entries)
					all, rerr := s.Entries(ctx)
					require.NoError(t, rerr)
					var got []string
					for _, en := range all {
						got = append(got, string(en.Raw()))
					}
					return err, got
				}
				wantErr, want := run("copied", func(s *repository.Session, entries [][]byte) error {
					if strict {
						return s.AppendIf(ctx, s.Head(), entries...)
					}
					return s.Append(ctx, entries...)
				})
				gotErr, got := run("owned", func(s *repository.Session, entries [][]byte) error {
					return s.AppendOwned(ctx, s.Head(), entries)
				})
				require.Equal(t, want, got, "the same entries stored")
				if wantErr == nil {
					require.NoError(t, gotErr)
					return
				}
				require.Error(t, gotErr)
				require.Equal(t, strings.ReplaceAll(wantErr.Error(), `"copied"`, `"owned"`), gotErr.Error())
				var we, ge *repository.EntryError
				require.Equal(t, errors.As(wantErr, &we), errors.As(gotErr, &ge))
				if we != nil {
					require.Equal(t, we.Index, ge.Index)
					require.Equal(t, we.EntryID, ge.EntryID)
				}
			})
		}
	}
}
