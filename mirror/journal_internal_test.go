package mirror

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recordsEnd returns the offset just past the last whole record of the journal
// file at path: what replay reads of it.
func recordsEnd(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	off := 0
	for off < len(data) {
		_, _, n, err := decodeRecord(data[off:])
		if err != nil {
			break
		}
		off += n
	}
	return int64(off), nil
}

// requireZeros requires b to hold only zeros.
func requireZeros(t *testing.T, b []byte, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, -1, slices.IndexFunc(b, func(c byte) bool { return c != 0 }), msgAndArgs...)
}

// newTestJournal opens a journal in a fresh outbox directory.
func newTestJournal(t *testing.T) (*journal, string) {
	t.Helper()
	dir := t.TempDir()
	j, recs, err := openJournal(dir)
	require.NoError(t, err)
	require.Empty(t, recs)
	return j, dir
}

// Concurrent appends share fsyncs: while the first fsync runs, every other append
// waits, and the next fsync covers all of them. A lone append pays one fsync. The
// error of an fsync reaches every append it covered, and the file is abandoned.
func TestJournal_GroupCommit(t *testing.T) {
	errSync := errors.New("fsync failed")
	tests := []struct {
		name      string
		callers   int
		second    error // result of the second file fsync
		wantSyncs int   // file fsyncs
	}{
		{"a lone append pays one fsync", 1, nil, 1},
		{"many appends share two fsyncs", 16, nil, 2},
		{"the shared fsync's error reaches every append it covered", 8, errSync, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, _ := newTestJournal(t)
			var mu sync.Mutex
			fileSyncs := 0
			j.sync = func(f *os.File) error {
				mu.Lock()
				fileSyncs++
				n := fileSyncs
				mu.Unlock()
				if n == 1 {
					// The first fsync runs until every other append waits behind it.
					for {
						j.mu.Lock()
						live := j.active.live
						j.mu.Unlock()
						if live == tt.callers {
							break
						}
						runtime.Gosched()
					}
					return f.Sync()
				}
				if n == 2 && tt.second != nil {
					return tt.second
				}
				return f.Sync()
			}
			errs := make([]error, tt.callers)
			files := make([]*journalFile, tt.callers)
			var wg sync.WaitGroup
			for i := range tt.callers {
				wg.Go(func() {
					files[i], _, errs[i] = j.append(fmt.Sprintf("k/%03d", i), []byte("segment"))
				})
			}
			wg.Wait()
			require.Equal(t, tt.wantSyncs, fileSyncs, "file fsyncs")
			require.Less(t, fileSyncs, max(tt.callers, 2), "fewer fsyncs than appends")
			failed := 0
			for _, err := range errs {
				if err != nil {
					require.ErrorIs(t, err, tt.second)
					failed++
				}
			}
			if tt.second == nil {
				require.Zero(t, failed)
				return
			}
			// The first fsync covered one append; the failed one all the others.
			require.Equal(t, tt.callers-1, failed)
			old := j.active
			_, _, err := j.append("k/next", []byte("segment"))
			require.NoError(t, err, "a later append goes to a new file")
			require.NotSame(t, old, j.active)
			require.NoError(t, j.close())
		})
	}
}

// A leader about to fsync waits for the appends other Uploads announced, so
// that one fsync covers them too; an announcement withdrawn, or one that does
// not arrive within the bound, lets it go on. In every case one fsync is made
// and the leader's record is durable.
func TestJournal_LeaderWaitsForAnnouncedAppends(t *testing.T) {
	tests := []struct {
		name string
		wait time.Duration // straggleWait
		// late is what the announced Upload does once the leader waits.
		late      func(t *testing.T, j *journal)
		wantLate  bool // its record is in the fsynced bytes
		wantSyncs int
	}{
		{"the announced append joins the leader's fsync", time.Hour, func(t *testing.T, j *journal) {
			_, _, err := j.appendAnnounced("k/late", []byte("segment"))
			require.NoError(t, err)
		}, true, 1},
		{"a withdrawn announcement lets the leader go on", time.Hour, func(_ *testing.T, j *journal) { j.unexpect(1) }, false, 1},
		{"an announcement that does not come in time", 20 * time.Millisecond, nil, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, dir := newTestJournal(t)
			j.straggleWait = tt.wait
			var mu sync.Mutex
			var synced []int64 // the file size at each fsync
			j.sync = func(f *os.File) error {
				end, err := recordsEnd(f.Name())
				if err != nil {
					return err
				}
				mu.Lock()
				synced = append(synced, end)
				mu.Unlock()
				return f.Sync()
			}
			j.expect(1)
			led := appendInBackground(j, "k/lead", false)
			// Wait (bounded) until the leader waits for the announced append.
			deadline := time.Now().Add(10 * time.Second)
			for {
				j.mu.Lock()
				leading := j.syncing
				j.mu.Unlock()
				if leading {
					break
				}
				require.True(t, time.Now().Before(deadline), "no leader")
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			require.Empty(t, synced, "the leader fsyncs only once the announced append came")
			mu.Unlock()
			if tt.late != nil {
				tt.late(t, j)
			}
			requireReturns(t, led, "the leader never fsynced")
			if tt.late == nil {
				j.unexpect(1)
			}
			require.Len(t, synced, tt.wantSyncs)
			recs, err := ReadJournal(dir)
			require.NoError(t, err)
			var keys []string
			for _, r := range recs {
				require.LessOrEqual(t, int64(r.End), synced[0], "record %s", r.Key)
				keys = append(keys, r.Key)
			}
			want := []string{"k/lead"}
			if tt.wantLate {
				want = append(want, "k/late")
			}
			require.Equal(t, want, keys)
			require.Zero(t, j.arriving)
			require.NoError(t, j.close())
		})
	}
}

// An Upload alone announces only its own append, which counts itself off when
// written: it fsyncs at once, whatever the bound.
func TestJournal_LoneAnnouncedAppendDoesNotWait(t *testing.T) {
	j, _ := newTestJournal(t)
	j.straggleWait = time.Hour
	var fileSyncs atomic.Int32
	j.sync = func(f *os.File) error {
		fileSyncs.Add(1)
		return f.Sync()
	}
	j.expect(1)
	requireReturns(t, appendInBackground(j, "k/only", true), "a lone announced append waited for itself")
	require.Zero(t, j.arriving)
	require.EqualValues(t, 1, fileSyncs.Load())
	require.NoError(t, j.close())
}

// Flushers that append again as soon as their fsync returns (callers flushing
// one session after another from several goroutines) share each fsync: the
// leader after a shared fsync yields once and waits for the appends announced
// meanwhile, so the flushers do not split into two cohorts that take turns.
// Without the yield and the wait, about one fsync per two records.
func TestJournal_FlushersShareFsyncs(t *testing.T) {
	j, _ := newTestJournal(t)
	var fsyncs atomic.Int32
	j.sync = func(*os.File) error {
		fsyncs.Add(1)
		time.Sleep(time.Millisecond) // a disk slower than an Upload's encoding
		return nil
	}
	const flushers, each = 4, 50
	var wg sync.WaitGroup
	errs := make([]error, flushers)
	for i := range flushers {
		wg.Go(func() {
			for k := range each {
				j.expect(1)
				if _, _, err := j.appendAnnounced(fmt.Sprintf("k/%d/%03d", i, k), []byte("segment")); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	records := flushers * each
	require.LessOrEqual(t, int(fsyncs.Load()), records*4/10, "fsyncs for %d records from %d flushers", records, flushers)
	require.NoError(t, j.close())
}

// appendInBackground appends a record under key (announced with expect or
// not) in a goroutine of its own and returns the channel its error comes on.
func appendInBackground(j *journal, key string, announced bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, _, err := j.appendRecord(key, []byte("segment"), announced)
		done <- err
	}()
	return done
}

// requireReturns waits, at most 10 s, for an append of appendInBackground to
// return, and fails with what if it does not.
func requireReturns(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// Replay keeps every record before the first torn or garbled one, whatever byte
// of the last record a crash cut or changed.
func TestJournal_TornTail(t *testing.T) {
	j, _ := newTestJournal(t)
	segs := [][]byte{[]byte("first segment"), []byte("second segment"), []byte("third segment, the one torn")}
	for i, s := range segs {
		_, _, err := j.append(fmt.Sprintf("p/k%d", i), s)
		require.NoError(t, err)
	}
	path := j.active.path
	require.NoError(t, j.close())
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	last := len(encodeRecord("p/k2", segs[2]))
	end, err := recordsEnd(path)
	require.NoError(t, err)
	requireZeros(t, file[end:], "written ahead of the records")
	require.Greater(t, len(file), int(end), "zeros written ahead of the records")
	whole := file[:end] // as a file without zeros ahead ends
	start := len(whole) - last

	replay := func(t *testing.T, data []byte) []journalRecord {
		t.Helper()
		d := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(d, outboxJournal), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, outboxJournal, filepath.Base(path)), data, 0o644))
		_, recs, err := openJournal(d)
		require.NoError(t, err)
		return recs
	}
	requireFirst := func(t *testing.T, recs []journalRecord, n int, what string) {
		t.Helper()
		require.Len(t, recs, n, what)
		for i, r := range recs {
			require.Equal(t, fmt.Sprintf("p/k%d", i), r.key, what)
			require.Equal(t, segs[i], r.data, what)
		}
	}
	requireFirst(t, replay(t, file), 3, "intact, with the zeros ahead")
	requireFirst(t, replay(t, whole), 3, "intact")
	for cut := start; cut < len(whole); cut++ {
		requireFirst(t, replay(t, whole[:cut]), 2, fmt.Sprintf("cut at %d", cut))
		// The same write torn over the zeros written ahead of it.
		over := append([]byte(nil), file...)
		clear(over[cut:end])
		requireFirst(t, replay(t, over), 2, fmt.Sprintf("cut at %d, zeros after", cut))
	}
	for at := start; at < len(whole); at++ {
		flipped := append([]byte(nil), file...)
		flipped[at] ^= 0x40
		requireFirst(t, replay(t, flipped), 2, fmt.Sprintf("byte %d flipped", at))
	}
	zeros := append(append([]byte(nil), whole[:start]...), make([]byte, last)...)
	requireFirst(t, replay(t, zeros), 2, "tail of zeros")
	garbled := append([]byte(nil), whole...)
	garbled[len(whole)-last-1] ^= 0x40 // the second record's last byte
	requireFirst(t, replay(t, garbled), 1, "nothing after the first bad record")
}

// Files rotate at the size bound and when drained; a file is deleted once it is not
// appended to and every record in it is done, and the drained active file at close.
func TestJournal_Rotation(t *testing.T) {
	j, dir := newTestJournal(t)
	j.rotateBytes, j.recycleBytes = 100, 50
	wal := func() []string {
		ents, err := os.ReadDir(filepath.Join(dir, outboxJournal))
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), journalExt) {
				names = append(names, e.Name())
			}
		}
		return names
	}
	seg := make([]byte, 60) // a record of 73 bytes
	fa, faPos, err := j.append("k/1", seg)
	require.NoError(t, err)
	j.done(fa, faPos)
	require.Len(t, wal(), 1, "the active file stays while it is appended to")
	fb, fbPos, err := j.append("k/2", seg)
	require.NoError(t, err)
	require.NotSame(t, fa, fb, "a drained file past the recycle bound is replaced")
	require.Equal(t, []string{filepath.Base(fb.path)}, wal(), "and deleted")
	fb2, fb2Pos, err := j.append("k/3", seg)
	require.NoError(t, err)
	require.Same(t, fb, fb2, "below the size bound with live records: no rotation")
	fc, fcPos, err := j.append("k/4", seg)
	require.NoError(t, err)
	require.NotSame(t, fb, fc, "rotated at the size bound")
	require.Len(t, wal(), 2)
	j.done(fb, fbPos)
	require.Len(t, wal(), 2, "a retired file stays while a record in it is live")
	j.done(fb2, fb2Pos)
	require.Equal(t, []string{filepath.Base(fc.path)}, wal(), "a retired file is deleted when its last record is done")
	j.done(fc, fcPos)
	require.NoError(t, j.close())
	require.Empty(t, wal(), "a drained journal is deleted at close")
}

// A group commit acknowledges an append only when a file sync that succeeded
// covered the record: every append that returned without error ends within the
// bytes the file held when a successful sync of it began. Syncs fail at injected
// points, while appends from several goroutines keep arriving during each sync;
// every append a failed sync covered fails, and appends go on in a new file.
func TestJournal_GroupCommitAcksOnlySyncedBytes(t *testing.T) {
	errSync := errors.New("injected fsync failure")
	for _, failEvery := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("every %d syncs fail", failEvery), func(t *testing.T) {
			j, _ := newTestJournal(t)
			var mu sync.Mutex
			calls := 0
			synced := map[string]int64{} // path → bytes held when a successful sync began
			j.sync = func(f *os.File) error {
				end, err := recordsEnd(f.Name())
				require.NoError(t, err)
				mu.Lock()
				calls++
				fail := calls%failEvery == 0
				mu.Unlock()
				runtime.Gosched() // let appends arrive while the sync runs
				if fail {
					return errSync
				}
				if err := datasync(f); err != nil {
					return err
				}
				mu.Lock()
				synced[f.Name()] = max(synced[f.Name()], end)
				mu.Unlock()
				return nil
			}
			const writers, each = 6, 20
			type ack struct {
				key  string
				path string
			}
			var acks []ack
			failed := 0
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						key := fmt.Sprintf("k/%d-%03d", w, i)
						jf, _, err := j.append(key, []byte("segment "+key))
						mu.Lock()
						if err != nil {
							require.ErrorIs(t, err, errSync)
							failed++
						} else {
							acks = append(acks, ack{key, jf.path})
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.NoError(t, j.close())
			require.Positive(t, failed, "some appends were covered by a failed sync")
			require.NotEmpty(t, acks)
			ends := map[string]int64{} // key → end of its record in its file
			for _, a := range acks {
				if _, ok := ends[a.key]; ok {
					continue
				}
				data, err := os.ReadFile(a.path)
				require.NoError(t, err)
				for off := 0; off < len(data); {
					key, _, n, err := decodeRecord(data[off:])
					if err != nil {
						requireZeros(t, data[off:], "past the records of %s", a.path)
						break
					}
					off += n
					ends[key] = int64(off)
				}
			}
			for _, a := range acks {
				end, ok := ends[a.key]
				require.True(t, ok, "acknowledged %s is in its file", a.key)
				require.LessOrEqual(t, end, synced[a.path], "acknowledged %s ends within bytes a successful sync covered", a.key)
			}
		})
	}
}

// datasync makes a file's data durable, and reports a file it cannot sync.
func TestDatasync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	_, err = f.Write([]byte("data"))
	require.NoError(t, err)
	require.NoError(t, datasync(f))
	require.NoError(t, f.Close())
	require.Error(t, datasync(f), "a closed file")
}

// A record that ends past the zeros written ahead is followed by preallocBytes
// of zeros; records that fit in them leave the file's length alone (so their
// fsyncs commit no new size); replay reads every record and stops at the zeros.
func TestJournal_RecordsOverZerosWrittenAhead(t *testing.T) {
	tests := []struct {
		name     string
		prealloc int64
		want     []int64 // the file's length after each append
	}{
		// Records of 73 bytes (see below).
		{"zeros ahead", 100, []int64{173, 173, 319, 319, 465}},
		{"a record longer than the zeros", 50, []int64{123, 196, 269, 342, 415}},
		{"none", 0, []int64{73, 146, 219, 292, 365}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, dir := newTestJournal(t)
			j.preallocBytes = tt.prealloc
			seg := make([]byte, 60) // a record of 73 bytes with a key of 3
			var got []int64
			for i := range tt.want {
				jf, _, err := j.append(fmt.Sprintf("k/%d", i), seg)
				require.NoError(t, err)
				fi, err := os.Stat(jf.path)
				require.NoError(t, err)
				got = append(got, fi.Size())
			}
			require.Equal(t, tt.want, got)
			require.NoError(t, j.close())
			_, recs, err := openJournal(dir)
			require.NoError(t, err)
			require.Len(t, recs, len(tt.want), "replay reads every record and no zeros")
		})
	}
}

// BenchmarkJournal_Append measures one appender's record of 2.3 KB (a turn's
// segment) and its fsync on the local disk, with the zeros written ahead of the
// records (the default) and without: the difference is the filesystem's own
// commit of a new file size that an fdatasync of an appended record pays.
func BenchmarkJournal_Append(b *testing.B) {
	for _, prealloc := range []int64{journalPreallocBytes, 0} {
		b.Run(fmt.Sprintf("prealloc=%d", prealloc), func(b *testing.B) {
			j, _, err := openJournal(b.TempDir())
			require.NoError(b, err)
			j.preallocBytes = prealloc
			seg := make([]byte, 2300)
			for i := range seg {
				seg[i] = byte(i)
			}
			b.SetBytes(int64(len(seg)))
			for i := 0; b.Loop(); i++ {
				jf, pos, err := j.append(fmt.Sprintf("k/%d", i), seg)
				if err != nil {
					b.Fatal(err)
				}
				j.done(jf, pos)
			}
			require.NoError(b, j.close())
		})
	}
}
