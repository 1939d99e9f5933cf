package mirror

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
)

// The journal
//
// Upload makes a segment durable by appending it as one record to the outbox
// journal, {OutboxDir}/journal/{seq}.wal, and waiting for an fsync of the journal
// file that covers the record. Concurrent Uploads share that fsync (group commit):
// the first to wait becomes the leader and fsyncs everything appended before it
// began; those that append meanwhile wait for the leader to finish and then elect
// the next one, which covers all of them. Before it fsyncs, a leader waits for
// the appends other Uploads have announced (they are encoding their segments:
// see expect), at most journalStraggleWait; when the fsync before covered more
// than one record, it first yields its core once (runtime.Gosched), so that
// the Uploads that fsync released and that append again at once (a caller
// flushing one session after another) announce theirs before it looks.
// Without both, the first Upload to write after an fsync led the next one
// alone while the others, a few tens of microseconds behind, waited for it:
// the groups alternated between one record and the rest. A lone Upload
// announces only itself and follows groups of one, so it pays exactly one
// fsync and no waiting. One file per segment, as the outbox used before, costs
// an fsync of the file and one of its directory per segment, and the fsyncs of
// concurrent Uploads cannot be shared. On Linux the file's fsync is an
// fdatasync: it makes the appended bytes and the new file size durable, as
// replay needs, and skips the timestamps.
//
// Records are written over zeros the file already holds: each time a record
// ends past them, journalPreallocBytes of zeros are written after it (with
// the record, so the same fsync covers them). An fdatasync of bytes written
// over blocks the file already has flushes only those bytes; one that grows
// the file must also commit the filesystem's journal (the new size and
// blocks), which on ext4 nearly doubles its cost (measured in BENCHMARKS.md).
// So one fsync per journalPreallocBytes of records pays the commit, not each
// one. Zeros never read as a record (a body is at least two bytes), so replay
// stops at them as at any torn tail.
//
// A record is framed as
//
//	uint32 length of the body, little-endian
//	uint32 CRC-32C of the body
//	body:  uint16 key length, the key, the segment bytes
//
// and written with one write call at the end of the file. A crash while records
// were appended can leave a torn or garbled tail (a partial write, a file
// extended with zeros): replay stops each file at its first record whose frame or
// checksum is wrong. Nothing after it was acknowledged, since every record after
// it was appended later and its Upload waited for an fsync that covered the torn
// one too.
//
// The upload workers PUT from memory; records are never rewritten. A journal
// file is deleted once it is no longer the one appended to and each of its
// records is uploaded, quarantined (copied to failed/ and fsynced first) or was
// refused to its Upload. Until then, each record done is marked in the file's
// marks file, {seq}.done beside it: one 16-byte mark per record,
//
//	uint64 offset of the record in the .wal file, little-endian
//	uint32 the record's CRC-32C
//	uint32 CRC-32C of the 12 bytes before
//
// written at the end of the marks file and never fsynced. A restart replays only
// the records no valid mark names (a mark must name a record's offset and CRC),
// so that it counts against MaxPending only what the store may lack: without the
// marks, a file holding one segment the store never confirmed brought back
// every other record of it, mostly stored already, and a restart during an
// outage refused new batches although the bound had room. A mark lost in a
// machine crash, or cut short, only makes its record replayed again, which is
// harmless: a segment PUT again with the same bytes is an idempotent success,
// and one compacted meanwhile is superseded and collapsed by readers. A mark is
// written only once its record is done, so it never hides a segment the store
// may lack.
//
// Appending switches to a new file when the current one reaches rotateBytes, or
// when every record in it is done and it holds at least recycleBytes (so that an
// idle replica's journal does not grow without bound, and a drained one costs
// one directory fsync per recycleBytes appended). rotateBytes bounds what a
// restart uploads again: the records of the files a crash left, mostly stored
// already (each costs a PUT answered "exists" and a check of the stored bytes),
// so it is kept small; a rotation costs one directory fsync. A file whose write
// or fsync failed is abandoned as well: after a failed fsync the kernel may have
// dropped its dirty pages, so no later fsync of it can be trusted.
const (
	outboxJournal        = "journal"
	journalExt           = ".wal"
	journalMarksExt      = ".done"
	journalMarkSize      = 16
	journalHeader        = 8
	journalRotateBytes   = 8 << 20
	journalRecycleBytes  = 1 << 20
	journalPreallocBytes = 256 << 10
	maxJournalKey        = 1<<16 - 1
)

// journalStraggleWait bounds how long a leader waits for announced appends
// before it fsyncs (see above). An announced append is an Upload encoding a
// turn, tens of microseconds; the bound only matters for one encoding a large
// batch, which then makes the next fsync instead, and it is well under the
// fsync it would otherwise wait for.
const journalStraggleWait = 500 * time.Microsecond

// castagnoli is the CRC-32C table of the record checksums (read-only).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errJournalRecord marks a record that cannot be replayed (torn or garbled).
var errJournalRecord = errors.New("torn or corrupt journal record")

// journal is the append-only log of the segments accepted by Upload.
type journal struct {
	dir string

	mu   sync.Mutex
	cond *sync.Cond // signalled when an fsync ends or a file is retired
	// arrived is signalled when an announced append is written or withdrawn,
	// or a leader's wait for them times out: only a leader waits on it (one
	// at a time, while syncing), so the fsync's waiters are not woken for it.
	arrived *sync.Cond
	// active is the file appended to (nil until the first append); next is the
	// sequence number of the file after it.
	active *journalFile
	next   uint64
	// syncing is set while a leader fsyncs the active file (or waits for
	// announced appends before it does).
	syncing bool
	// arriving counts the appends announced (expect) and not yet written or
	// withdrawn; straggleWait bounds a leader's wait for them
	// (journalStraggleWait; tests change it).
	arriving     int
	straggleWait time.Duration
	// appended counts the records written; grouped is what it was when the
	// last fsync began, and lastGroup how many records that fsync covered.
	appended, grouped, lastGroup int
	// syncs counts the fsyncs the journal made (files and directory).
	syncs int
	// sync makes a journal file's data durable (datasync: fdatasync where there
	// is one), syncDir the journal directory (both replaced in tests).
	sync    func(*os.File) error
	syncDir func(string) error
	// rotateBytes and recycleBytes are the rotation bounds, preallocBytes how
	// many zeros are written past a record that ends past the file's zeros
	// (see above; tests change them); zeros holds preallocBytes of zeros once
	// needed.
	rotateBytes, recycleBytes, preallocBytes int64
	zeros                                    []byte
	// marking holds the files whose marks file is open; closed is set by close,
	// after which nothing is marked.
	marking map[*journalFile]struct{}
	closed  bool
}

// journalFile is one file of the journal.
type journalFile struct {
	seq  uint64
	path string
	f    *os.File // open while active
	size int64    // bytes appended
	// alloc is the length of the file while it is appended to: the records,
	// then zeros written ahead of them (see above).
	alloc int64
	good  int64 // bytes known durable: [0, good) survives a crash
	err   error // why the bytes past good cannot be made durable
	live  int   // records not yet done
	// marks is the marks file (nil until the first mark, or after a failure
	// to open it); marksSize the bytes of valid marks in it.
	marks     *os.File
	marksSize int64
}

// journalPos names one record of a journal file: its offset and its CRC-32C.
type journalPos struct {
	off int64
	crc uint32
}

// journalRecord is one segment read back from the journal at start.
type journalRecord struct {
	file *journalFile
	pos  journalPos
	key  string
	data []byte
}

// openJournal creates the journal directory under dir if needed, reads back the
// records of every file a previous process left, in append order, and deletes the
// files that hold none.
func openJournal(dir string) (*journal, []journalRecord, error) {
	j := &journal{
		dir: filepath.Join(dir, outboxJournal), next: 1,
		sync: datasync, syncDir: fsutil.SyncDir,
		rotateBytes: journalRotateBytes, recycleBytes: journalRecycleBytes,
		preallocBytes: journalPreallocBytes, straggleWait: journalStraggleWait,
		marking: map[*journalFile]struct{}{},
	}
	j.cond = sync.NewCond(&j.mu)
	j.arrived = sync.NewCond(&j.mu)
	if err := mkdirAllSync(j.dir); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	var seqs, markSeqs []uint64
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), journalExt)
		isMarks := false
		if !ok {
			name, isMarks = strings.CutSuffix(e.Name(), journalMarksExt)
		}
		if !ok && !isMarks {
			continue
		}
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue // not ours
		}
		if isMarks {
			markSeqs = append(markSeqs, seq)
			continue
		}
		seqs = append(seqs, seq)
		j.next = max(j.next, seq+1)
	}
	slices.Sort(seqs)
	for _, seq := range markSeqs {
		if _, found := slices.BinarySearch(seqs, seq); !found {
			// The marks of a file deleted by a process that stopped before
			// deleting them, or by an older version.
			if err := os.Remove(j.marksPath(seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("journal: %w", err)
			}
		}
	}
	var recs []journalRecord
	for _, seq := range seqs {
		jf := &journalFile{seq: seq, path: j.path(seq)}
		data, err := os.ReadFile(jf.path)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: %w", err)
		}
		marked, valid, err := readMarks(j.marksPath(seq))
		if err != nil {
			return nil, nil, fmt.Errorf("journal: %w", err)
		}
		jf.marksSize = valid
		for off := 0; off < len(data); {
			key, seg, n, err := decodeRecord(data[off:])
			if err != nil {
				break // a torn tail: nothing from here on was acknowledged
			}
			pos := journalPos{off: int64(off), crc: binary.LittleEndian.Uint32(data[off+4:])}
			off += n
			if marked[pos] {
				continue // done before the restart
			}
			recs = append(recs, journalRecord{file: jf, pos: pos, key: key, data: seg})
			jf.live++
		}
		jf.size, jf.good = int64(len(data)), int64(len(data))
		if jf.live == 0 {
			if err := j.removeFile(jf); err != nil {
				return nil, nil, fmt.Errorf("journal: %w", err)
			}
		}
	}
	return j, recs, nil
}

func (j *journal) path(seq uint64) string {
	return filepath.Join(j.dir, fmt.Sprintf("%020d%s", seq, journalExt))
}

func (j *journal) marksPath(seq uint64) string {
	return filepath.Join(j.dir, fmt.Sprintf("%020d%s", seq, journalMarksExt))
}

// encodeMark frames the mark of the record at pos.
func encodeMark(pos journalPos) []byte {
	b := make([]byte, journalMarkSize)
	binary.LittleEndian.PutUint64(b, uint64(pos.off))
	binary.LittleEndian.PutUint32(b[8:], pos.crc)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	return b
}

// readMarks reads the marks file at path (missing: no marks) up to its first
// invalid mark, and returns the marked positions and the length of the valid
// marks.
func readMarks(path string) (map[journalPos]bool, int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	marked := make(map[journalPos]bool, len(data)/journalMarkSize)
	off := 0
	for ; off+journalMarkSize <= len(data); off += journalMarkSize {
		b := data[off : off+journalMarkSize]
		if crc32.Checksum(b[:12], castagnoli) != binary.LittleEndian.Uint32(b[12:]) {
			break // cut short or garbled: nothing from here on counts
		}
		marked[journalPos{off: int64(binary.LittleEndian.Uint64(b)), crc: binary.LittleEndian.Uint32(b[8:])}] = true
	}
	return marked, int64(off), nil
}

// markLocked records in jf's marks file that the record at pos is done. It is
// best effort: a mark that is not written only makes the record replayed at the
// next start.
func (j *journal) markLocked(jf *journalFile, pos journalPos) {
	if j.closed {
		return
	}
	if jf.marks == nil {
		f, err := os.OpenFile(j.marksPath(jf.seq), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return
		}
		jf.marks = f
		j.marking[jf] = struct{}{}
	}
	if _, err := jf.marks.WriteAt(encodeMark(pos), jf.marksSize); err == nil {
		jf.marksSize += journalMarkSize
	}
}

// removeFile deletes jf and its marks file, the journal file first: marks
// left without it are deleted at the next start.
func (j *journal) removeFile(jf *journalFile) error {
	var err error
	if jf.marks != nil {
		err = jf.marks.Close()
		jf.marks = nil
		delete(j.marking, jf)
	}
	if rerr := os.Remove(jf.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return errors.Join(err, rerr)
	}
	if rerr := os.Remove(j.marksPath(jf.seq)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// encodeRecord frames key and data as one record.
func encodeRecord(key string, data []byte) []byte {
	body := 2 + len(key) + len(data)
	rec := make([]byte, journalHeader+body)
	binary.LittleEndian.PutUint16(rec[journalHeader:], uint16(len(key)))
	copy(rec[journalHeader+2:], key)
	copy(rec[journalHeader+2+len(key):], data)
	binary.LittleEndian.PutUint32(rec, uint32(body))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[journalHeader:], castagnoli))
	return rec
}

// decodeRecord reads the record at the start of b: its key, its segment bytes
// (aliasing b) and its length. It fails with errJournalRecord when the record is
// torn or garbled.
func decodeRecord(b []byte) (string, []byte, int, error) {
	if len(b) < journalHeader+2 {
		return "", nil, 0, errJournalRecord
	}
	body := int(binary.LittleEndian.Uint32(b))
	if body < 2 || body > len(b)-journalHeader {
		return "", nil, 0, errJournalRecord
	}
	rec := b[journalHeader : journalHeader+body]
	if crc32.Checksum(rec, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return "", nil, 0, errJournalRecord
	}
	klen := int(binary.LittleEndian.Uint16(rec))
	if klen == 0 || 2+klen > body {
		return "", nil, 0, errJournalRecord
	}
	return string(rec[2 : 2+klen]), rec[2+klen:], journalHeader + body, nil
}

// append writes key and data as one record and returns, with the file holding it
// and its position there, once the record is durable. On error the record does not count as accepted (a
// crash may still leave it replayable: uploading it then stores a segment whose
// entries the caller hands over again, and readers collapse the copies).
func (j *journal) append(key string, data []byte) (*journalFile, journalPos, error) {
	return j.appendRecord(key, data, false)
}

// appendAnnounced is append for a record announced with expect: it counts as
// arrived once written (or failed), and a leader waiting for it goes on.
func (j *journal) appendAnnounced(key string, data []byte) (*journalFile, journalPos, error) {
	return j.appendRecord(key, data, true)
}

// expect announces n appends about to be made with appendAnnounced, so that a
// leader about to fsync waits for them (see above).
func (j *journal) expect(n int) {
	j.mu.Lock()
	j.arriving += n
	j.mu.Unlock()
}

// unexpect withdraws n announced appends that will not be made, or not soon (an
// Upload that failed, or that waits for room in the outbox).
func (j *journal) unexpect(n int) {
	j.mu.Lock()
	j.arrivedLocked(n)
	j.mu.Unlock()
}

// arrivedLocked counts off n announced appends, made or withdrawn, and wakes a
// leader waiting for them.
func (j *journal) arrivedLocked(n int) {
	j.arriving -= n
	j.arrived.Signal()
}

// appendRecord is append, and appendAnnounced when announced is set.
func (j *journal) appendRecord(key string, data []byte, announced bool) (*journalFile, journalPos, error) {
	if len(key) == 0 || len(key) > maxJournalKey {
		if announced {
			j.unexpect(1)
		}
		return nil, journalPos{}, fmt.Errorf("journal append: key of %d bytes", len(key))
	}
	rec := encodeRecord(key, data)
	j.mu.Lock()
	defer j.mu.Unlock()
	if announced {
		// A leader sees this once the lock is released: after the write below
		// or a failure before it, or while a rotation after a failed write
		// waits for the leader (whose fsync then goes without this record).
		j.arrivedLocked(1)
	}
	if err := j.rotateIfDueLocked(); err != nil {
		return nil, journalPos{}, fmt.Errorf("journal append: %w", err)
	}
	jf := j.active
	pos := journalPos{off: jf.size, crc: binary.LittleEndian.Uint32(rec[4:])}
	if _, err := jf.f.WriteAt(rec, jf.size); err != nil {
		// Cut off a partial record so that later ones stay replayable; if that
		// fails too, abandon the file.
		if terr := jf.f.Truncate(jf.size); terr != nil {
			jf.err = fmt.Errorf("journal %s: %w", jf.path, err)
		} else {
			jf.alloc = jf.size
		}
		return nil, journalPos{}, fmt.Errorf("journal append: %w", err)
	}
	jf.size += int64(len(rec))
	j.preallocLocked(jf)
	jf.live++
	j.appended++
	end := jf.size
	if err := j.awaitDurableLocked(jf, end); err != nil {
		j.doneLocked(jf, pos)
		return nil, journalPos{}, fmt.Errorf("journal append: %w", err)
	}
	return jf, pos, nil
}

// preallocLocked writes j.preallocBytes of zeros after jf's records when the
// last one ended past the zeros written before (see above). It only saves
// later fsyncs work: if the write fails (a full disk), the records go on
// growing the file, as they would without it, and the zeros it did write are
// a tail replay stops at.
func (j *journal) preallocLocked(jf *journalFile) {
	if jf.size <= jf.alloc {
		return
	}
	jf.alloc = jf.size
	if j.preallocBytes <= 0 {
		return
	}
	if int64(len(j.zeros)) != j.preallocBytes {
		j.zeros = make([]byte, j.preallocBytes)
	}
	if _, err := jf.f.WriteAt(j.zeros, jf.size); err == nil {
		jf.alloc = jf.size + j.preallocBytes
	}
}

// counts returns how many records the journal appended and how many fsyncs it
// made, since it was opened.
func (j *journal) counts() (records, syncs uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return uint64(j.appended), uint64(j.syncs)
}

// awaitDurableLocked returns once jf's bytes up to end are durable (group commit,
// see above), or with the error that makes them uncertain.
func (j *journal) awaitDurableLocked(jf *journalFile, end int64) error {
	for {
		switch {
		case jf.good >= end:
			return nil
		case jf.err != nil:
			return jf.err
		case j.syncing:
			j.cond.Wait()
			continue
		}
		// Lead: fsync everything appended so far. jf is the active file: a retired
		// one is durable to its end or has err set.
		j.syncing = true
		if j.lastGroup > 1 {
			// Uploads the last fsync released may be about to append
			// again: let them run up to their announcement first.
			j.mu.Unlock()
			runtime.Gosched()
			j.mu.Lock()
		}
		j.awaitArrivingLocked()
		target, f := jf.size, jf.f
		j.lastGroup, j.grouped = j.appended-j.grouped, j.appended
		j.mu.Unlock()
		err := j.sync(f)
		j.mu.Lock()
		j.syncing = false
		j.syncs++
		if err != nil {
			jf.err = fmt.Errorf("journal fsync %s: %w", jf.path, err)
		} else {
			jf.good = max(jf.good, target)
		}
		j.cond.Broadcast()
	}
}

// awaitArrivingLocked waits, as a leader about to fsync, until the announced
// appends are written or withdrawn, at most j.straggleWait. No file rotates
// meanwhile (syncing is set), so what they write lands in the file the
// leader fsyncs.
func (j *journal) awaitArrivingLocked() {
	if j.arriving <= 0 || j.straggleWait <= 0 {
		return
	}
	expired := false
	t := time.AfterFunc(j.straggleWait, func() {
		j.mu.Lock()
		expired = true
		j.arrived.Signal()
		j.mu.Unlock()
	})
	for j.arriving > 0 && !expired {
		j.arrived.Wait()
	}
	t.Stop()
}

// rotateIfDueLocked starts a new active file when there is none, the active one
// failed, or it is past a rotation bound and no fsync of it runs.
func (j *journal) rotateIfDueLocked() error {
	a := j.active
	if a != nil && a.err == nil {
		if j.syncing || (a.size < j.rotateBytes && (a.live > 0 || a.size < j.recycleBytes)) {
			return nil
		}
	}
	for j.syncing { // only after a write failure: the leader still holds a's descriptor
		j.cond.Wait()
	}
	seq := j.next
	p := j.path(seq)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	// The new name must be durable before a record in it can be.
	j.syncs++
	if err := j.syncDir(j.dir); err != nil {
		f.Close()
		_ = os.Remove(p)
		return err
	}
	j.next++
	j.active = &journalFile{seq: seq, path: p, f: f}
	if a != nil {
		j.retireLocked(a)
	}
	return nil
}

// retireLocked closes a file that is no longer appended to, after making what it
// holds durable, and deletes it when none of its records is live.
func (j *journal) retireLocked(jf *journalFile) {
	if jf.err == nil && jf.good < jf.size {
		j.syncs++
		if err := j.sync(jf.f); err != nil {
			jf.err = fmt.Errorf("journal fsync %s: %w", jf.path, err)
		} else {
			jf.good = jf.size
		}
	}
	_ = jf.f.Close()
	jf.f = nil
	if jf.live == 0 {
		_ = j.removeFile(jf)
	}
	j.cond.Broadcast() // waiters for jf's records: durable now, or failed
}

// done records that the record of jf at pos was uploaded, quarantined or refused.
func (j *journal) done(jf *journalFile, pos journalPos) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.doneLocked(jf, pos)
}

// doneLocked deletes jf once its last live record is done, unless it is still
// appended to, and otherwise marks the record at pos done. Neither is fsynced: a
// file or record that comes back after a machine crash is uploaded again,
// harmlessly (see above).
func (j *journal) doneLocked(jf *journalFile, pos journalPos) {
	jf.live--
	if jf.live == 0 && jf != j.active {
		_ = j.removeFile(jf)
		return
	}
	j.markLocked(jf, pos)
}

// close closes the active file, deleting it when none of its records is live,
// and the marks files. No append may run or follow.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	var err error
	if a := j.active; a != nil {
		j.active = nil
		err = a.f.Close()
		a.f = nil
		if a.live == 0 {
			err = errors.Join(err, j.removeFile(a))
		}
	}
	for jf := range j.marking {
		err = errors.Join(err, jf.marks.Close())
		jf.marks = nil
	}
	clear(j.marking)
	return err
}
