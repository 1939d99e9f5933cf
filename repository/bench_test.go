package repository_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
)

// BenchmarkAppend measures one append of one message entry against MinIO, in
// default mode (list the session, put a segment) and in strict mode (get the
// head, put a segment, put the head with If-Match). Sessions rotate every
// appendsPerSession appends so that listing cost stays that of a normal session.
// Without MinIO it is skipped (and fails under CI=true).
func BenchmarkAppend(b *testing.B) {
	const appendsPerSession = 64
	for _, mode := range []struct {
		name   string
		strict bool
	}{{"Default", false}, {"Strict", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newEnv(b, newMinioBucket(b))
			r := e.repo(alice)
			ctx := b.Context()
			var s *repository.Session
			parent := ""
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%appendsPerSession == 0 {
					b.StopTimer()
					var err error
					s, err = r.Create(ctx, repository.CreateOptions{ID: fmt.Sprintf("bench-%d", i), Strict: mode.strict})
					require.NoError(b, err)
					parent = ""
					b.StartTimer()
				}
				id := fmt.Sprintf("e%d", i)
				if err := s.Append(ctx, msg(id, parent, "benchmark turn")); err != nil {
					b.Fatal(err)
				}
				parent = id
			}
		})
	}
}
