package follow_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// remote is an in-memory store and uploader: what Upload accepts goes to the
// pending list of its session (an outbox), which flush moves to the stored
// segments; with direct, Upload stores at once. It outlives the followers of a
// test, as a bucket and an outbox outlive a process.
type remote struct {
	mu       sync.Mutex
	direct   bool
	segments map[transcript.TranscriptRef][][][]byte // stored segments, in order
	pending  map[transcript.TranscriptRef][][][]byte
	// failNext fails the next n Uploads; acceptThenFail makes them accept the
	// batch first (a crash after the outbox append, before the state write).
	failNext       int
	acceptThenFail bool
	uploads        int
	// reads counts the calls of Entries, markerChecks those of MarkerExists,
	// existsChecks those of SessionExists; checkFails fails SessionExists,
	// MarkerExists and PutMarker.
	reads, markerChecks, existsChecks int
	checkFails                        bool
	// existsFails fails SessionExists alone.
	existsFails bool
	// markers are the followers' markers the store holds, by namespace/id.
	markers map[string][]byte
	// drops counts the calls of DropQueued; keepQueued makes it take back
	// nothing (as when every batch is in flight already).
	drops      int
	keepQueued bool
	// gone: the bucket does not exist (deleteBucket): every request to the
	// store fails with bucket.ErrNoBucket, and flush uploads nothing (the
	// outbox retries). missing tells the follower, as an outbox whose
	// uploads fail so (a follow.BucketWatcher).
	gone    bool
	missing chan struct{}
	// retention holds the sessions a retention policy marked for deletion.
	retention map[transcript.TranscriptRef]bool
}

func newRemote() *remote {
	return &remote{direct: true, segments: map[transcript.TranscriptRef][][][]byte{}, pending: map[transcript.TranscriptRef][][][]byte{},
		markers: map[string][]byte{}, missing: make(chan struct{}, 1)}
}

// errNoBucket is what the remote's store answers while its bucket is gone.
var errNoBucket = fmt.Errorf("NoSuchBucket: %w", bucket.ErrNoBucket)

var errInjected = errors.New("injected upload failure")

func (r *remote) Upload(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	fail := r.failNext > 0
	if fail {
		r.failNext--
		if !r.acceptThenFail {
			return errInjected
		}
	}
	seg := make([][]byte, len(entries))
	for i, e := range entries {
		seg[i] = slices.Clone(e)
	}
	r.uploads++
	if r.direct {
		r.segments[ref] = append(r.segments[ref], seg)
	} else {
		r.pending[ref] = append(r.pending[ref], seg)
	}
	if fail {
		return errInjected
	}
	return nil
}

func (r *remote) Pending(_ context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Concat(r.pending[ref]...), nil
}

func (r *remote) Entries(_ context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.gone {
		return nil, errNoBucket
	}
	return slices.Concat(r.segments[ref]...), nil
}

// SessionExists reports whether the store holds a segment of ref with a
// session header (a follow.SessionChecker).
func (r *remote) SessionExists(_ context.Context, ref transcript.TranscriptRef) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.existsChecks++
	if r.gone {
		return false, errNoBucket
	}
	if r.checkFails || r.existsFails {
		return false, errInjected
	}
	for _, seg := range r.segments[ref] {
		if slices.ContainsFunc(seg, isHeaderLine) {
			return true, nil
		}
	}
	return false, nil
}

// isHeaderLine reports whether line is a Pi session header.
func isHeaderLine(line []byte) bool {
	_, err := pi.ParseHeader(line)
	return err == nil
}

// MarkerExists reports whether the store holds the follower's marker (a
// follow.SessionChecker).
func (r *remote) MarkerExists(_ context.Context, ns, id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markerChecks++
	if r.gone {
		return false, errNoBucket
	}
	if r.checkFails {
		return false, errInjected
	}
	_, ok := r.markers[ns+"/"+id]
	return ok, nil
}

// PutMarker stores the follower's marker, keeping one already there (a
// follow.SessionChecker).
func (r *remote) PutMarker(_ context.Context, ns, id string, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return errNoBucket
	}
	if r.checkFails {
		return errInjected
	}
	if _, ok := r.markers[ns+"/"+id]; !ok {
		r.markers[ns+"/"+id] = slices.Clone(body)
	}
	return nil
}

// DropQueued takes back what is pending of ref (a follow.QueueDropper):
// nothing is in flight here.
func (r *remote) DropQueued(_ context.Context, ref transcript.TranscriptRef) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drops++
	if r.keepQueued {
		return 0, nil
	}
	n := len(r.pending[ref])
	delete(r.pending, ref)
	return n, nil
}

// flush stores what is pending, as a mirror's workers do.
func (r *remote) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return
	}
	for ref, segs := range r.pending {
		r.segments[ref] = append(r.segments[ref], segs...)
	}
	r.pending = map[transcript.TranscriptRef][][][]byte{}
}

// stored returns every entry stored and pending of ref, in order, as strings.
func (r *remote) all(ref transcript.TranscriptRef) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, seg := range append(slices.Clone(r.segments[ref]), r.pending[ref]...) {
		for _, e := range seg {
			out = append(out, string(e))
		}
	}
	return out
}

// segmentCount is the number of segments of ref, stored and pending.
func (r *remote) segmentCount(ref transcript.TranscriptRef) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.segments[ref]) + len(r.pending[ref])
}

// fixture is a test's root, state directory, remote and events.
type fixture struct {
	t      *testing.T
	root   string
	state  string
	remote *remote
	mu     sync.Mutex
	events []follow.Event
	// tune adjusts the config of each follower.
	tune func(*follow.Config)
	// maxEntry, when set, is each follower's entry limit (follow.SetMaxEntry).
	maxEntry int64
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, root: filepath.Join(t.TempDir(), "sessions"), state: t.TempDir(), remote: newRemote()}
}

// open starts a follower on the fixture (closed when the test ends).
func (fx *fixture) open() *follow.Follower {
	fx.t.Helper()
	cfg := follow.Config{Root: fx.root, StateDir: fx.state, Uploader: fx.remote, Store: fx.remote, NoSync: true,
		BatchInterval: 10 * time.Millisecond, OnEvent: fx.record}
	if fx.tune != nil {
		fx.tune(&cfg)
	}
	f, err := follow.New(cfg)
	require.NoError(fx.t, err)
	fx.t.Cleanup(func() { f.Close() })
	if fx.maxEntry > 0 {
		follow.SetMaxEntry(f, fx.maxEntry)
	}
	return f
}

func (fx *fixture) record(ev follow.Event) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.events = append(fx.events, ev)
}

// once runs a new follower's Once and closes it (a process run by cron).
func (fx *fixture) once() error {
	fx.t.Helper()
	f := fx.open()
	defer f.Close()
	return f.Once(fx.t.Context())
}

// eventsOf returns the events of kind recorded so far, and forgets every event.
func (fx *fixture) take(kind follow.EventKind) []follow.Event {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	var out []follow.Event
	for _, ev := range fx.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	fx.events = nil
	return out
}

// saw reports whether an event of kind whose message holds text was recorded.
func (fx *fixture) saw(kind follow.EventKind, text string) bool {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for _, ev := range fx.events {
		if ev.Kind == kind && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}

// write creates (or replaces) the file rel under the root with lines, each
// followed by a newline.
func (fx *fixture) write(rel string, lines ...string) string {
	fx.t.Helper()
	p := filepath.Join(fx.root, filepath.FromSlash(rel))
	require.NoError(fx.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(fx.t, os.WriteFile(p, []byte(joinLines(lines)), 0o644))
	return p
}

// appendRaw appends data to the file rel.
func (fx *fixture) appendRaw(rel, data string) {
	fx.t.Helper()
	f, err := os.OpenFile(filepath.Join(fx.root, filepath.FromSlash(rel)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(fx.t, err)
	_, err = f.WriteString(data)
	require.NoError(fx.t, err)
	require.NoError(fx.t, f.Close())
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// header is a version 3 header line of session id; entry is a message entry.
func header(id string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T03:04:05.678Z","cwd":"/home/u/proj"}`, id)
}

func entry(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":%q}}`, id, p, text)
}

// piFolder is the folder Pi keeps the sessions of /home/u/proj in.
const piFolder = "--home-u-proj--"

func refOf(session string) transcript.TranscriptRef {
	return transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: piFolder, SessionID: session}
}

// requireOnce requires the remote to hold exactly lines for ref, each once, in
// that order.
func requireOnce(t *testing.T, r *remote, ref transcript.TranscriptRef, lines ...string) {
	t.Helper()
	require.Equal(t, lines, r.all(ref))
}
