package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// Stuck sessions
//
// A session is stuck when the store refused one of its segments for good (the
// segment went to the outbox quarantine) or refused a batch before it reached the
// outbox (an entry the store cannot hold, an invalid reference). Its later
// segments are held back in the quarantine too, in order: uploading them would
// put entries in the bucket whose parents are not there. Other sessions keep
// uploading. Status, the Prometheus collector and `transcript outbox` name every
// stuck session with its error and the number of entries held back.
//
// To release one, fix the cause, then call Mirror.Release (in the running
// process) or stop the process and run `transcript outbox --release SESSION DIR`
// (ReleaseOutbox): the session's quarantined segments move back to pending/ and
// upload in their order. A batch refused before the outbox is retried by the
// session's next Flush; Release only clears its record.

// ErrStuck is wrapped by Upload when it refuses a batch for good (the store can
// never hold it): the session is reported in Status.Stuck until it is released
// or a later batch of it is accepted.
var ErrStuck = errors.New("session stuck: batch refused for good")

// StuckSession is a session whose uploads are held back (see Status.Stuck).
type StuckSession struct {
	// Session is "namespace/agent/session".
	Session string `json:"session"`
	// Error is why the store refused the session's first held-back segment or batch.
	Error string `json:"error"`
	// Segments counts the session's segments in the quarantine (0 when only a
	// batch was refused before reaching the outbox).
	Segments int `json:"segments"`
	// Entries counts the entries held back: those of the quarantined segments, or
	// of the refused batch.
	Entries int `json:"entries"`
	// Since is when the session got stuck.
	Since time.Time `json:"since"`
}

// stuckRecord is a stuck session as the Mirror keeps it: cause is the error that
// quarantined its first held-back segment in this process (nil for a record loaded
// from the outbox at start, or for a refused batch), so that AwaitQuiescence can
// wrap it and callers can test it with errors.Is whenever the quarantine happened.
type stuckRecord struct {
	StuckSession
	cause error
}

// outboxReasons is the directory of the outbox that says why each quarantined
// segment was refused: {OutboxDir}/reasons/{key} is a line of text. It is kept
// apart from failed/ so that the quarantine holds nothing but segments.
const outboxReasons = "reasons"

func (o *outbox) reasonPath(key string) string {
	return filepath.Join(o.dir, outboxReasons, filepath.FromSlash(key))
}

// permanentBatch reports whether PrepareSegments refused a batch for a reason that
// handing it over again cannot change.
func permanentBatch(err error) bool {
	return errors.Is(err, pi.ErrInvalidEntry) || errors.Is(err, transcript.ErrInvalidRef) ||
		errors.Is(err, segment.ErrEntryTooLarge) || errors.Is(err, segment.ErrTooLarge) ||
		errors.Is(err, segment.ErrInvalidEntry) || errors.Is(err, segment.ErrInvalidMeta)
}

// refuseBatch records a batch of ref refused for good.
func (m *Mirror) refuseBatch(ref transcript.TranscriptRef, entries int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := ref.Norm().String()
	st := m.stuck[name]
	if st == nil {
		st = &stuckRecord{StuckSession: StuckSession{Session: name, Since: time.Now()}}
		m.stuck[name] = st
	}
	if st.Segments == 0 {
		st.Error, st.Entries = err.Error(), entries
	}
	m.stats.failures++
	m.stats.lastError, m.stats.lastErrorTime = err.Error(), time.Now()
}

// acceptedBatch clears the record of a refused batch of ref once a batch of it was
// accepted.
func (m *Mirror) acceptedBatch(ref transcript.TranscriptRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := ref.Norm().String()
	if st := m.stuck[name]; st != nil && st.Segments == 0 {
		delete(m.stuck, name)
	}
}

// stuckLocked records j's segment as quarantined because of cause (caller holds
// mu). The first quarantined segment of a session names the session's error.
func (m *Mirror) stuckLocked(j *job, cause error) {
	name := transcript.SessionNameOfKey(j.key)
	st := m.stuck[name]
	if st == nil || st.Segments == 0 {
		st = &stuckRecord{StuckSession: StuckSession{Session: name, Error: cause.Error(), Since: time.Now()}, cause: cause}
		m.stuck[name] = st
	}
	st.Segments++
	st.Entries += j.entries
}

// heldBackLocked reports whether j's session has segments in the quarantine, so j
// must wait behind them (caller holds mu).
func (m *Mirror) heldBackLocked(j *job) bool {
	st := m.stuck[transcript.SessionNameOfKey(j.key)]
	return st != nil && st.Segments > 0
}

// holdBackLocked moves j, queued behind a quarantined segment of its session, to
// the quarantine and finishes it (caller holds mu; j is not in flight).
func (m *Mirror) holdBackLocked(j *job) {
	if j.entries == 0 {
		if j.data != nil {
			j.entries = entriesOf(j.data)
		} else {
			j.entries = entriesIn(m.box.pendingPath(j.key))
		}
	}
	const reason = "held back behind an earlier quarantined segment of the session"
	if err := m.quarantineCopy(j, j.data); err != nil {
		m.cfg.Logger.Error("mirror: hold back segment", "key", j.key, "err", err)
	}
	m.box.writeReason(j.key, reason)
	st := m.stuck[transcript.SessionNameOfKey(j.key)] // heldBackLocked: it has segments there
	st.Segments++
	st.Entries += j.entries
	m.stats.quarantined++
	j.err = fmt.Errorf("%w: %s", ErrQuarantined, reason)
	m.finishLocked(j)
}

// quarantineJob moves j's segment, refused for good by the store, to the quarantine
// and records its session as stuck.
func (m *Mirror) quarantineJob(j *job, data []byte, err error) {
	if j.entries == 0 {
		j.entries = entriesOf(data)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if qerr := m.quarantineCopy(j, data); qerr != nil {
		m.cfg.Logger.Error("mirror: quarantine failed; the segment stays pending for the next start", "key", j.key, "err", qerr)
	}
	m.box.writeReason(j.key, err.Error())
	m.stuckLocked(j, err)
	m.stats.quarantined++
}

// quarantineCopy puts j's segment into the quarantine: a file under pending/ is
// moved there, a journal record (data) written there. If that fails, a journal
// record stays live, so that its file is kept for the next start (caller holds mu).
func (m *Mirror) quarantineCopy(j *job, data []byte) error {
	if j.jf == nil {
		return m.box.quarantine(j.key)
	}
	if err := m.box.quarantineData(j.key, data); err != nil {
		j.jf = nil // never released: the record is replayed at the next start
		return err
	}
	return nil
}

// Release moves the quarantined segments of ref back into the upload queue, ahead
// of anything else of the session, and clears its stuck record. It returns how
// many segments it released. Call it once the cause is fixed; a segment refused
// again is quarantined again.
func (m *Mirror) Release(ctx context.Context, ref transcript.TranscriptRef) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	name := ref.Norm().String()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	keys, err := m.box.quarantinedOf(name)
	if err != nil {
		return 0, fmt.Errorf("mirror release %s: %w", name, err)
	}
	var jobs []*job
	for _, k := range keys {
		if err := m.box.unquarantine(k); err != nil {
			return len(jobs), fmt.Errorf("mirror release %s: %w", name, err)
		}
		fi, err := os.Stat(m.box.pendingPath(k))
		if err != nil {
			return len(jobs), fmt.Errorf("mirror release %s: %w", name, err)
		}
		j := &job{key: k, session: transcript.SessionOfKey(k), size: fi.Size(), enqueued: time.Now(), done: make(chan struct{})}
		m.pending[j] = struct{}{}
		m.bytes += j.size
		m.stats.quarantined--
		jobs = append(jobs, j)
	}
	delete(m.stuck, name)
	m.queue = append(jobs, m.queue...)
	if len(jobs) > 0 {
		m.signal()
	}
	return len(jobs), nil
}

// stuckSnapshot returns the stuck sessions in name order (caller holds mu).
func (m *Mirror) stuckSnapshot() []StuckSession {
	var out []StuckSession
	for _, st := range m.stuck {
		out = append(out, st.StuckSession)
	}
	slices.SortFunc(out, func(a, b StuckSession) int { return strings.Compare(a.Session, b.Session) })
	return out
}

// loadStuck records the sessions with segments in the quarantine at start.
func (m *Mirror) loadStuck() error {
	st, err := m.box.stuck()
	if err != nil {
		return err
	}
	for i := range st {
		m.stuck[st[i].Session] = &stuckRecord{StuckSession: st[i]}
	}
	return nil
}

// InspectOutbox lists the stuck sessions of the outbox directory dir (which a
// running Mirror may hold): those with segments in its quarantine. It only reads.
// A directory that does not exist or holds no outbox gives a *NoOutboxError.
func InspectOutbox(dir string) ([]StuckSession, error) {
	if err := checkOutbox(dir); err != nil {
		return nil, err
	}
	o := &outbox{dir: dir}
	return o.stuck()
}

// ReleaseOutbox moves the quarantined segments of session ("namespace/agent/
// session") of the outbox directory dir back to pending/, for the next Mirror on
// it to upload. It takes the outbox lock, so it fails while a Mirror holds it (use
// Mirror.Release there). It returns how many segments it moved. A directory that
// does not exist or holds no outbox gives a *NoOutboxError, and nothing is created
// in it.
func ReleaseOutbox(dir, session string) (int, error) {
	if err := checkOutbox(dir); err != nil {
		return 0, err
	}
	o, err := openOutbox(dir)
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", session, err)
	}
	defer o.close()
	keys, err := o.quarantinedOf(session)
	if err != nil {
		return 0, fmt.Errorf("release %s: %w", session, err)
	}
	for i, k := range keys {
		if err := o.unquarantine(k); err != nil {
			return i, fmt.Errorf("release %s: %w", session, err)
		}
	}
	return len(keys), nil
}

// quarantined returns the keys of the segments in the quarantine, in key order.
func (o *outbox) quarantined() ([]string, error) {
	root := filepath.Join(o.dir, outboxFailed)
	var keys []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, segment.Ext) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbox quarantine: %w", err)
	}
	slices.Sort(keys)
	return keys, nil
}

// quarantinedOf returns the quarantined keys of one session, in key order.
func (o *outbox) quarantinedOf(session string) ([]string, error) {
	keys, err := o.quarantined()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(keys, func(k string) bool { return transcript.SessionNameOfKey(k) != session }), nil
}

// stuck groups the quarantine by session.
func (o *outbox) stuck() ([]StuckSession, error) {
	keys, err := o.quarantined()
	if err != nil {
		return nil, err
	}
	var out []StuckSession
	for _, k := range keys {
		name := transcript.SessionNameOfKey(k)
		if len(out) == 0 || out[len(out)-1].Session != name {
			reason := o.readReason(k)
			var since time.Time
			if fi, err := os.Stat(o.failedPath(k)); err == nil {
				since = fi.ModTime()
			}
			out = append(out, StuckSession{Session: name, Error: reason, Since: since})
		}
		st := &out[len(out)-1]
		st.Segments++
		st.Entries += entriesIn(o.failedPath(k))
	}
	slices.SortFunc(out, func(a, b StuckSession) int { return strings.Compare(a.Session, b.Session) })
	return out, nil
}

// writeReason stores why key was quarantined, next to it. Failing to is logged by
// nobody: the reason is a courtesy for operators, the quarantine itself is done.
func (o *outbox) writeReason(key, reason string) {
	p := o.reasonPath(key)
	if mkdirAllSync(filepath.Dir(p)) == nil {
		_ = os.WriteFile(p, []byte(reason+"\n"), 0o644)
	}
}

// readReason returns why key was quarantined, if recorded.
func (o *outbox) readReason(key string) string {
	data, err := os.ReadFile(o.reasonPath(key))
	if err != nil {
		return "quarantined by an earlier process (no reason recorded)"
	}
	return strings.TrimSpace(string(data))
}

// unquarantine moves key from the quarantine back to pending/ and drops its reason.
func (o *outbox) unquarantine(key string) error {
	src, dst := o.failedPath(key), o.pendingPath(key)
	if err := mkdirAllSync(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		return err
	}
	_ = os.Remove(o.reasonPath(key))
	return errors.Join(fsutil.SyncDir(filepath.Dir(dst)), fsutil.SyncDir(filepath.Dir(src)))
}

// entriesIn returns the entry count in the metadata of the segment file at p (0
// when it cannot be read).
func entriesIn(p string) int {
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	return entriesOf(head[:n])
}

// entriesOf returns the entry count in the metadata of a segment or a prefix of
// one (0 when it cannot be read).
func entriesOf(data []byte) int {
	dec, err := segment.NewDecoder()
	if err != nil {
		return 0
	}
	defer dec.Close()
	meta, _, err := dec.ReadMeta(data)
	if err != nil {
		return 0
	}
	return int(meta.EntryCount)
}
