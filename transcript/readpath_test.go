package transcript_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// readPath is one way to read a whole session: it returns the entries' bytes.
type readPath struct {
	name string
	read func(ctx context.Context, s *transcript.Store, h transcript.Head) ([][]byte, error)
}

// listedRead runs read on the Listed reader of ref from one listing of its agent.
func listedRead(ctx context.Context, s *transcript.Store, ahead bool, read func(*transcript.Listed) ([][]byte, error)) ([][]byte, error) {
	var out [][]byte
	prefetch := func(transcript.TranscriptRef) bool { return ahead }
	err := s.ForEachListedSessionAhead(ctx, ref.Namespace, ref.AgentID, 1, prefetch, func(ctx context.Context, l *transcript.Listed) error {
		var err error
		out, err = read(l)
		return err
	})
	return out, err
}

// leanRaws returns the entries of a lean result.
func leanRaws(res *transcript.LeanResult, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := res.WriteJSONL(&buf); err != nil {
		return nil, err
	}
	return bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")), nil
}

// incRaws returns the entries of an increment.
func incRaws(inc *transcript.Increment, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	return inc.Raw(), nil
}

// readPaths lists every read that returns a session's entries.
var readPaths = []readPath{
	{"ReadAll", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		res, err := s.ReadAll(ctx, ref)
		if err != nil {
			return nil, err
		}
		return res.Raw(), nil
	}},
	{"ReadLean", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		return leanRaws(s.ReadLean(ctx, ref))
	}},
	{"ReadNew", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		return incRaws(s.ReadNew(ctx, ref, transcript.SegmentSet{}))
	}},
	{"ReadCommitted", func(ctx context.Context, s *transcript.Store, h transcript.Head) ([][]byte, error) {
		_, inc, err := s.ReadCommitted(ctx, ref, h, transcript.SegmentSet{})
		return incRaws(inc, err)
	}},
	{"ReadLeanCommitted", func(ctx context.Context, s *transcript.Store, h transcript.Head) ([][]byte, error) {
		_, res, err := s.ReadLeanCommitted(ctx, ref, h)
		return leanRaws(res, err)
	}},
	{"Listed.ReadNew", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		return listedRead(ctx, s, false, func(l *transcript.Listed) ([][]byte, error) {
			return incRaws(l.ReadNew(ctx, l.Ref(), transcript.SegmentSet{}))
		})
	}},
	{"Listed.ReadLean", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		return listedRead(ctx, s, false, func(l *transcript.Listed) ([][]byte, error) { return leanRaws(l.ReadLean(ctx, l.Ref())) })
	}},
	{"Listed.ReadLean ahead", func(ctx context.Context, s *transcript.Store, _ transcript.Head) ([][]byte, error) {
		return listedRead(ctx, s, true, func(l *transcript.Listed) ([][]byte, error) { return leanRaws(l.ReadLean(ctx, l.Ref())) })
	}},
	{"ReadSegment", func(ctx context.Context, s *transcript.Store, h transcript.Head) ([][]byte, error) {
		var out [][]byte
		for _, rel := range h.Segments {
			seg, err := s.ReadSegment(ctx, s.SessionPrefix(ref)+rel)
			if err != nil {
				return nil, err
			}
			out = append(out, seg.Entries...)
		}
		return out, nil
	}},
}

// TestReadPaths_ResolvePayloads reads a strict session whose entries hold
// payloads by reference through every read path: each returns the entries as
// written, with no reference left, and through a Stored store each returns the
// references (the opt-out that forks and summaries use).
func TestReadPaths_ResolvePayloads(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	w := newWriter(t, "w1")
	first := [][]byte{entry("a", ""), imageEntry("b", "a", imageData(40, 2*testThreshold))}
	second := [][]byte{toolEntry("c", "b", imageData(41, 2*testThreshold))}
	_, h, err := s.CreateSession(ctx, ref, first, w, transcript.CreateOptions{Strict: true, Head: "b"})
	require.NoError(t, err)
	_, h, err = s.CommitSegment(ctx, ref, h, second, w, "c", nil)
	require.NoError(t, err)
	want := append(append([][]byte{}, first...), second...)
	for _, p := range readPaths {
		t.Run(p.name, func(t *testing.T) {
			got, err := p.read(ctx, s, h)
			require.NoError(t, err)
			require.Equal(t, want, got, "entries as written")
			for _, raw := range got {
				require.NotContains(t, string(raw), segment.RefPrefix)
			}
			stored, err := p.read(ctx, s.Stored(), h)
			require.NoError(t, err)
			require.Len(t, stored, len(want))
			refs := 0
			for _, raw := range stored {
				refs += bytes.Count(raw, []byte(segment.RefPrefix))
			}
			require.Equal(t, 2, refs, "a Stored read returns the references")
		})
	}
}
