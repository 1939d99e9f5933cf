package sessiontree_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seededRand is a deterministic id source.
type seededRand struct{ r *rand.ChaCha8 }

func newSeeded(seed uint64) *seededRand {
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	return &seededRand{rand.NewChaCha8(s)}
}

func (s *seededRand) Read(p []byte) (int, error) { return s.r.Read(p) }

// clock returns a deterministic Now that advances one second per call.
func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 9, 25, 22, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func testConfig(t testing.TB) sessiontree.Config {
	return sessiontree.Config{Root: t.TempDir(), Now: clock(), Rand: newSeeded(1)}
}

// storesOnUpload gives a fake Uploader the answers of one that stores each batch
// before Upload returns and reads only the batch's entries (as mirror.Direct does).
type storesOnUpload struct{}

func (storesOnUpload) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

func (storesOnUpload) ReadsLocalFiles() bool { return false }

// recorder is a fake Uploader that records batches and can be made to fail.
type recorder struct {
	storesOnUpload
	mu      sync.Mutex
	batches []sessiontree.Batch
	fail    error
}

func (r *recorder) Upload(ctx context.Context, b sessiontree.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	cp := b
	cp.Entries = make([][]byte, len(b.Entries))
	for i, e := range b.Entries {
		cp.Entries[i] = bytes.Clone(e)
	}
	r.batches = append(r.batches, cp)
	return nil
}

func (r *recorder) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for _, b := range r.batches {
		out = append(out, b.Entries...)
	}
	return out
}

var errUpload = errors.New("upload refused")

// fakeStore is a shared store: Upload union-merges by id (identical bytes
// collapse, first writer wins a conflict), ReadAll returns the store order,
// and ReadNew returns all of it every time, without origins, as a reader that
// holds no segment gets it.
type fakeStore struct {
	storesOnUpload
	mu      sync.Mutex
	order   map[string][][]byte
	ids     map[string]bool
	uploads int
}

func newFakeStore() *fakeStore {
	return &fakeStore{ids: map[string]bool{}, order: map[string][][]byte{}}
}

func (s *fakeStore) Upload(ctx context.Context, b sessiontree.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploads++
	for _, raw := range b.Entries {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		k := b.Ref.String() + "\x00" + v.ID
		if s.ids[k] {
			continue
		}
		s.ids[k] = true
		s.order[b.Ref.String()] = append(s.order[b.Ref.String()], bytes.Clone(raw))
	}
	return nil
}

func (s *fakeStore) ReadAll(ctx context.Context, ref transcript.TranscriptRef) (*transcript.MergeResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := s.order[ref.String()]
	res := &transcript.MergeResult{Entries: make([]transcript.Entry, len(es))}
	for i, e := range es {
		res.Entries[i] = transcript.Entry{Raw: bytes.Clone(e)}
	}
	return res, nil
}

func (s *fakeStore) ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error) {
	res, err := s.ReadAll(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &transcript.Increment{MergeResult: res, Have: have}, nil
}

func readFixture(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func ids(es []sessiontree.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID()
	}
	return out
}

func lines(t testing.TB, path string) []string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	out := make([]string, len(s))
	for i, l := range s {
		out[i] = string(l)
	}
	return out
}

const (
	userMsg      = `{"role":"user","content":[{"type":"text","text":"%s"}],"timestamp":1790375350000}`
	assistantMsg = `{"role":"assistant","content":[{"type":"text","text":"%s"}],"api":"openai-completions","provider":"%s","model":"%s","usage":{"input":1,"output":1},"stopReason":"stop","timestamp":1790375352000}`
)
