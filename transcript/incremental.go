package transcript

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Increment is what ReadNew found beyond the segments a reader holds.
type Increment struct {
	// MergeResult is the union-merge of the segments that were fetched, in merge
	// order among themselves; it may repeat entries the reader holds already (a
	// compacted segment that had to be fetched holds old entries too), which a
	// reader collapses by id. Segments lists the fetched segments.
	*MergeResult
	// Have is the set the reader holds once it has applied the entries: the
	// segments it held, those fetched, and those found to hold nothing new (a
	// compacted segment whose inputs were all held, the inputs of a fetched
	// compacted segment), restricted to what the listing still shows.
	Have SegmentSet
	// Listed is the number of segments the listing showed.
	Listed int
	// Covered lists the new segments that were not fetched because the reader held
	// everything they contain (compacted segments whose inputs it held, and
	// segments superseded by a fetched compacted one).
	Covered []SegmentInfo
	// Full reports whether the listing covered the whole session (see ReadNew);
	// otherwise it held only the newest level-0 keys and the compacted segments.
	// An increment of ReadCommitted is always full: the head names everything.
	Full bool
	// Missing lists, relative to the session, the segments a strict session's
	// head names that do not exist (ReadCommitted): the session is damaged.
	Missing []string
	// HeadListed reports whether a whole listing (Full, by ReadNew) showed the
	// session's strict head object (HeadName). A strict create writes its first
	// segment before its head: a reader that read the session as a default-mode
	// one in between learns here, at no cost, that it is strict.
	HeadListed bool
	// Via maps each segment ReadCommitted read in place of a compacted segment
	// the head names (one of its level-0 inputs) to that compacted segment, both
	// relative to the session: a reader that orders entries by the place in the
	// head of the segment they were read from gives these that segment's place.
	Via map[string]string

	// whole reports that the increment is a whole session read for a reader
	// that held none of it (a full listing of an empty set), so that an entry
	// whose parent it lacks lacks it for the reader too (see hasDangling).
	whole bool
}

// hasDangling reports whether the increment holds an entry whose parent neither
// it nor its reader holds, which a read of a whole session heals by listing it
// once more (healDangling). Only an increment read for a reader that held
// nothing can tell: the entries of any other name parents the reader holds, so
// without this a full listing of such a reader (every reconcile of a
// SessionTree's pull and of a Watch) would take them for dangling and list the
// session a second time. A segment that lands behind a reader's listing is found
// by its next full listing, as ReadNew says.
func (inc *Increment) hasDangling() bool {
	return inc.whole && inc.MergeResult.hasDangling()
}

// noteHead records whether the whole listing the increment was read from showed
// a strict head (HeadListed).
func (inc *Increment) noteHead(listed bool) {
	if inc != nil {
		inc.HeadListed = listed
	}
}

// Changed reports whether the increment holds entries or changes the held set.
func (inc *Increment) Changed(have SegmentSet) bool {
	return len(inc.Entries) > 0 || !inc.Have.Equal(have)
}

// ReadNew lists ref and fetches only the segments that are neither in have nor
// superseded by what have holds, so a reader that syncs often pays for what is new,
// not for the length of the session.
//
// Listing. Most calls list incrementally: the level-0 keys after the newest
// level-0 key have holds less Config.Reconcile.Margin of key time (a margin for PUT
// latency and small clock skew), and, in the same request (they sort after
// "L0/"), every key of the higher levels: compacted segments, which compaction
// keeps few. Key time is never trusted for completeness: a segment that lands late
// with a key below that point (an outbox that waited through an outage, a writer
// whose clock is slow and that had not read the session) is found by the next full
// listing, which runs on the first ReadNew of a set that has none behind it (a set
// from NewSegmentSet, as after a restart), after Config.Reconcile.Every incremental
// ones and once Config.Reconcile.After has passed since the last one; a full
// listing also drops from the set what compaction deleted. Compacted segments are
// listed every time because an input the reader never held (a late one) may be
// deleted once compacted: its entries then exist only in the compacted segment,
// which is found at the next call, not at the next full listing.
//
// Fetching. A compacted segment holds exactly the union of its inputs. One that is
// new to the reader is therefore not fetched when every input is held (its metadata
// frame, read with a ranged GET, names them); when only a few small level-0 inputs
// are missing and still listed, those are fetched instead of the whole compacted
// segment; otherwise it is fetched, and so are those of its inputs that are still
// listed (a claim to supersede hides nothing that exists, see fetchSession; an
// input below an incremental listing's start is read at the next full listing).
//
// A session without segments gives an error wrapping bucket.ErrNotFound (found by a full
// listing; an incremental one that lists nothing reports nothing new). A listed
// segment that vanishes before it is fetched (compaction removed it) makes ReadNew
// list again, at most Config.MaxRelists times, then it fails with ErrVanished.
func (s *Store) ReadNew(ctx context.Context, ref TranscriptRef, have SegmentSet) (*Increment, error) {
	ctx, task := trace.NewTask(ctx, "transcript.ReadNew")
	defer task.End()
	var inc *Increment
	var err error
	if after, ok := s.listFrom(have); ok {
		inc, err = readListedAfter(ctx, s, ref, after, func(infos []SegmentInfo) (*Increment, error) {
			return s.readNewScoped(ctx, infos, have, after)
		})
	} else {
		inc, err = readListed(ctx, s, ref, func(infos []SegmentInfo) (*Increment, error) {
			return s.readNew(ctx, infos, have)
		})
	}
	if err != nil {
		return nil, err
	}
	return inc, nil
}

// ReconcilePolicy decides when ReadNew lists a whole session instead of only what
// is new. The zero value takes every default.
type ReconcilePolicy struct {
	// Every is how many incremental listings may follow a full one (default
	// DefaultReconcileEvery); negative: every ReadNew lists the whole session.
	Every int
	// After is how long (by Config.Now) after a full listing the next ReadNew
	// lists the whole session again (default DefaultReconcileAfter).
	After time.Duration
	// Margin is how far, in key time, below the newest level-0 key the reader
	// holds an incremental listing starts (default DefaultListMargin).
	Margin time.Duration
}

// Defaults of ReconcilePolicy.
//
// A late segment (below an incremental listing's start) is found within Every
// syncs or After, whichever comes first. A replica taking a turn a minute thus
// lists the whole session about every hour and pays for what is new on the other
// turns, so a turn's cost does not grow with the session however slowly it syncs;
// one that syncs often pays for a full listing in 1/(Every+1) of its syncs: at
// 1,000 segments, a 60 ms LIST adds 1 ms to each. A reader that needs late
// segments sooner (repository's Watch reconciles every few seconds) starts a full
// listing itself with SegmentSet.Reconcile.
// The margin covers the time between a key's stamp and its PUT becoming visible,
// and clock skew between writers that have not read each other's keys, up to two
// minutes; later arrivals wait for the next full listing.
const (
	DefaultReconcileEvery = 64
	DefaultReconcileAfter = 10 * time.Minute
	DefaultListMargin     = 2 * time.Minute
)

// reconcile returns Config.Reconcile with its defaults filled in.
func (s *Store) reconcile() ReconcilePolicy {
	p := s.cfg.Reconcile
	if p.Every == 0 {
		p.Every = DefaultReconcileEvery
	}
	if p.After <= 0 {
		p.After = DefaultReconcileAfter
	}
	if p.Margin <= 0 {
		p.Margin = DefaultListMargin
	}
	return p
}

// listFrom returns the relative key after which ReadNew lists have's session
// incrementally, or false when it must list the whole session.
func (s *Store) listFrom(have SegmentSet) (string, bool) {
	p := s.reconcile()
	if p.Every < 0 || have.fullAt.IsZero() || have.partial >= p.Every || have.mark == "" {
		return "", false
	}
	if since := s.cfg.Now().Sub(have.fullAt); since < 0 || since >= p.After {
		return "", false
	}
	t, err := relKeyTime(have.mark)
	if err != nil {
		return "", false
	}
	return "L0/" + t.Add(-p.Margin).UTC().Format(keyTimeLayout), true
}

// relKeyTime returns the key time of a relative segment key.
func relKeyTime(rel string) (time.Time, error) {
	_, name, _ := strings.Cut(rel, "/")
	if len(name) < len(keyTimeLayout) {
		return time.Time{}, fmt.Errorf("%w: %q", ErrNotSegmentKey, rel)
	}
	return time.Parse(keyTimeLayout, name[:len(keyTimeLayout)])
}

// metaProbe is how many bytes a first ranged read of a segment asks for: enough
// for the metadata frame of a compacted segment naming a few hundred inputs.
const metaProbe = 32 << 10

// readMetas reads the metadata frames of infos (in parallel, bounded), keyed by
// relative key. A segment whose frame cannot be read or verified is left out, so
// that it is fetched whole and the full read reports the problem; a vanished one
// is bucket.ErrNotFound.
func (s *Store) readMetas(ctx context.Context, infos []SegmentInfo) (map[string]segment.Meta, error) {
	metas := make([]segment.Meta, len(infos))
	ok := make([]bool, len(infos))
	err := s.eachMeta(ctx, infos, func(ctx context.Context, i int, m segment.Meta, err error) error {
		switch {
		case errors.Is(err, bucket.ErrNotFound):
			return err
		case err != nil:
			return ctx.Err()
		case KeyChecksum(m) != infos[i].Hash:
			return nil
		}
		metas[i], ok[i] = m, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]segment.Meta, len(infos))
	for i, in := range infos {
		if ok[i] {
			out[sessionRelKey(in.Key)] = metas[i]
		}
	}
	return out, nil
}

// eachMeta reads the metadata frames of infos (ReadSegmentMeta), at most readLimit at
// once, and hands each result to fn with its index; the first error fn returns
// stops the rest (their ctx is cancelled) and is returned.
func (s *Store) eachMeta(ctx context.Context, infos []SegmentInfo, fn func(ctx context.Context, i int, m segment.Meta, err error) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.readLimit(len(infos)))
	for i, in := range infos {
		g.Go(func() error {
			m, err := s.ReadSegmentMeta(gctx, in.Key)
			return fn(gctx, i, m, err)
		})
	}
	return g.Wait()
}

// ReadSegmentMeta reads and verifies only the metadata frame of the segment at key, with
// ranged reads (bucket.RangeReader): usually one request for a few hundred bytes.
func (s *Store) ReadSegmentMeta(ctx context.Context, key string) (segment.Meta, error) {
	info, err := ParseKey(s.cfg.Prefix, key)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata: %w", err)
	}
	if _, visible, err := s.checkRef(info.Ref); err != nil || !visible || s.hidden(info) {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, bucket.ErrNotFound)
	}
	head, err := s.cfg.Bucket.GetRange(ctx, key, 0, metaProbe)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	n, err := segment.MetaSize(head)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	if n > len(head) && len(head) == metaProbe {
		rest, err := s.cfg.Bucket.GetRange(ctx, key, int64(len(head)), int64(n-len(head)))
		if err != nil {
			return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
		}
		head = append(head, rest...)
	}
	m, _, err := s.dec.ReadMeta(head)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	return m, nil
}

// MaxAdaptiveReadConcurrency bounds the parallel fetches of one read when
// Config.ReadConcurrency is zero.
const MaxAdaptiveReadConcurrency = 64

// readLimit is how many of n segments one read fetches at once: Config.ReadConcurrency
// when set; otherwise DefaultReadConcurrency, raised to one fetch per 2 segments
// for larger sessions (up to MaxAdaptiveReadConcurrency). A read of small segments
// waits on request latency, not bandwidth: a session of 100 segments takes two
// rounds of GETs instead of nine, one of 1,000 segments 16 instead of 125.
// ReadConcurrency returns how many segments a read of n segments fetches at once:
// Config.ReadConcurrency when set, otherwise min(MaxAdaptiveReadConcurrency,
// max(DefaultReadConcurrency, n/2)).
func (s *Store) ReadConcurrency(n int) int { return s.readLimit(n) }

func (s *Store) readLimit(n int) int {
	if !s.adaptiveReads {
		return s.cfg.ReadConcurrency
	}
	return min(MaxAdaptiveReadConcurrency, max(DefaultReadConcurrency, n/2))
}
