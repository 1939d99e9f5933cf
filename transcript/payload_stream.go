package transcript

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/segment"
)

// Streaming the payloads of a lean read. A read through a Stored store returns
// the session as stored, references in place, at the size of its text; a
// restore then writes the entries in merge order and needs each one's payloads
// only when its turn comes. EachResolved hands it the entries one at a time,
// their payloads put back, fetching ahead within a window of bytes: the fetches
// overlap the caller's writes, and the memory held is the window's, not the
// session's.

// DefaultResolveWindow bounds the payload bytes EachResolved fetches ahead of the
// entry its caller is at.
const DefaultResolveWindow = 128 << 20

// minFetchCharge is the least a payload fetch counts against the window, so that
// a window of tiny payloads does not start millions of fetches.
const minFetchCharge = 64 << 10

// ResolvedEntry is one entry of EachResolved: its bytes with the payloads put
// back.
type ResolvedEntry struct {
	// Pieces, one after the other, are the entry's bytes: its stored bytes and
	// its payloads in turn (one piece, the stored bytes, for an entry without
	// references). They are valid only during the call; the caller must not
	// modify them.
	Pieces [][]byte
	// Plain reports that each payload put back is bytes that can stand between
	// the quotes of a JSON string (jsonscan.StringContent), as every payload a
	// writer takes out of an entry is: the entry then has the JSON structure of
	// its stored form, which differs only inside those strings. Always true for
	// an entry without references.
	Plain bool
}

// PlainEntry is the ResolvedEntry of raw, an entry with no payload to put back.
func PlainEntry(raw []byte) ResolvedEntry {
	return ResolvedEntry{Pieces: [][]byte{raw}, Plain: true}
}

// EachPlain calls fn for the entries idx in turn, each with the bytes raw gives
// it and no payload to put back (PlainEntry): EachResolved of entries that hold
// no reference, for callers whose entries have their payloads already.
func EachPlain(idx []int, raw func(i int) []byte, fn func(i int, e ResolvedEntry) error) error {
	for _, i := range idx {
		if err := fn(i, PlainEntry(raw(i))); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the length of the entry's bytes.
func (e ResolvedEntry) Len() int {
	n := 0
	for _, p := range e.Pieces {
		n += len(p)
	}
	return n
}

// Bytes returns the entry's bytes in one slice (a copy when it has payloads).
func (e ResolvedEntry) Bytes() []byte {
	if len(e.Pieces) == 1 {
		return e.Pieces[0]
	}
	b := make([]byte, 0, e.Len())
	for _, p := range e.Pieces {
		b = append(b, p...)
	}
	return b
}

// streamFetch is one payload EachResolved fetches: done is closed once data (or
// err) is set.
type streamFetch struct {
	hash   PayloadHash
	size   uint64
	charge int64 // what it counts against the window, released with it
	done   chan struct{}
	buf    *[]byte // holds the decompressed payload, buf[:size]
	plain  bool
	err    error
	users  int // entries sent or being prepared that hold it (guarded by resolveStream.mu)
}

// streamItem is an entry with references, as the scheduler sends it to the
// writer: a fetch per reference, in the references' order.
type streamItem struct {
	i       int
	fetches []*streamFetch
}

// resolveStream is the state EachResolved shares between its scheduler, its
// fetches and its caller's goroutine.
type resolveStream struct {
	mu     sync.Mutex
	live   map[PayloadHash]*streamFetch // fetches some entry still needs
	budget *semaphore.Weighted          // the window
	window int64
	bufs   sync.Pool // *[]byte: decompressed payloads
	objs   sync.Pool // *[]byte: compressed objects
}

// EachResolved calls fn for the entries idx of res (merge-order indexes, in the
// order given; res is a LeanResult of session ref read through a Stored store)
// with each one's bytes as a read that is not Stored returns them: every payload
// fetched, checked (size and SHA-256) and put back in place of its reference.
// Payloads are fetched ahead of fn within a window of DefaultResolveWindow bytes
// (the store's readLimit at once), in the order of idx, so that fetching
// overlaps what fn does; a payload that several entries within the window hold
// is fetched once, one held by an entry beyond it again. A missing payload is an
// error wrapping ErrPayloadMissing, one that does not check out an error
// wrapping segment.ErrCorrupt; an error of fn is returned as is. Either stops the
// fetches, and so does the cancellation of ctx; every goroutine EachResolved
// started has ended when it returns. Entries of res whose references were
// already put back (a read that is not Stored) are passed as they are.
func (s *Store) EachResolved(ctx context.Context, ref TranscriptRef, res *LeanResult, idx []int, fn func(i int, e ResolvedEntry) error) error {
	refs := 0
	for _, i := range idx {
		refs += len(res.Refs(i))
	}
	if refs == 0 {
		return EachPlain(idx, res.Raw, fn)
	}
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return err
	}
	if !visible {
		return fmt.Errorf("read %s: %w", ref, errOutside(ref))
	}
	window := s.resolveWindow
	if window <= 0 {
		window = DefaultResolveWindow
	}
	st := &resolveStream{live: map[PayloadHash]*streamFetch{}, budget: semaphore.NewWeighted(window), window: window}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	items := make(chan streamItem, 64)
	ns := ref.Namespace
	slots := make(chan struct{}, s.readLimit(refs))
	g.Go(func() error {
		defer close(items)
		return st.schedule(gctx, g, res, idx, items, func(f *streamFetch) error {
			return s.fetchStreamed(gctx, ns, st, slots, f)
		})
	})
	var fnErr error
	err = st.deliver(gctx, res, idx, items, func(i int, e ResolvedEntry) error {
		fnErr = fn(i, e)
		return fnErr
	})
	if err != nil {
		cancel()
	}
	gerr := g.Wait()
	st.drain(items)
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil && !isContextErr(err):
		// A fetch's failure that deliver met before the group recorded it (the
		// fetch closes done before its goroutine returns): the cancel above can
		// have let another goroutine's context error be the group's first.
		return fmt.Errorf("read %s: %w", ref, err)
	case gerr != nil:
		return fmt.Errorf("read %s: %w", ref, gerr)
	case err != nil: // the caller's cancellation
		return fmt.Errorf("read %s: %w", ref, err)
	}
	return nil
}

// isContextErr reports whether err is a context's cancellation or deadline.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// schedule walks idx ahead of the writer: for each entry with references it
// starts the fetches of the payloads no entry in the window holds yet (within
// the window: it waits for the writer to release room), then sends the entry on
// items.
func (st *resolveStream) schedule(ctx context.Context, g *errgroup.Group, res *LeanResult, idx []int, items chan<- streamItem, fetch func(*streamFetch) error) error {
	for _, i := range idx {
		refs := res.Refs(i)
		if len(refs) == 0 {
			continue
		}
		it := streamItem{i: i, fetches: make([]*streamFetch, len(refs))}
		var fresh []*streamFetch
		var charge, shared int64
		st.mu.Lock()
		for k, r := range refs {
			f := st.live[r.Hash]
			if f == nil {
				f = &streamFetch{hash: r.Hash, size: r.Size, done: make(chan struct{})}
				st.live[r.Hash] = f
				fresh = append(fresh, f)
				charge += max(int64(r.Size), minFetchCharge)
			} else if f.size != r.Size {
				st.mu.Unlock()
				return errSizesDiffer(r.Hash, f.size, r.Size)
			}
			if !containsFetch(it.fetches[:k], f) {
				f.users++
				shared += f.charge // 0 for a fresh one
			}
			it.fetches[k] = f
		}
		st.mu.Unlock()
		// One entry's fetches are taken from the window at once, at most what
		// the window holds beside the fetches it shares with entries before it
		// (those stay while it holds them), so that the room it waits for is
		// always released by the entries before it, which the writer is at. An
		// entry larger than that goes over the window by the difference.
		charge = min(charge, max(0, st.window-shared))
		if charge > 0 {
			if err := st.budget.Acquire(ctx, charge); err != nil {
				for _, f := range fresh {
					f.err = err
					close(f.done)
				}
				return err
			}
			// The charge goes to the entry's first new fetch, the rest to none:
			// it is released when that fetch is dropped.
			fresh[0].charge = charge
		}
		for _, f := range fresh {
			g.Go(func() error { return fetch(f) })
		}
		select {
		case items <- it:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// containsFetch reports whether fs holds f.
func containsFetch(fs []*streamFetch, f *streamFetch) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}

// fetchStreamed fetches the payload of f (one of slots at a time) into a buffer
// of the pool, and tells whether it is plain string content.
func (s *Store) fetchStreamed(ctx context.Context, ns string, st *resolveStream, slots chan struct{}, f *streamFetch) error {
	defer close(f.done)
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-ctx.Done():
		f.err = ctx.Err()
		return f.err
	}
	if f.size == 0 || f.size > uint64(s.MaxEntrySize()) {
		f.err = fmt.Errorf("payload %x: %w: size %d out of range", f.hash, segment.ErrCorrupt, f.size)
		return f.err
	}
	buf, _ := st.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	if uint64(cap(*buf)) < f.size {
		*buf = make([]byte, f.size)
	}
	f.buf = buf
	obj, _ := st.objs.Get().(*[]byte)
	if obj == nil {
		obj = new([]byte)
	}
	defer st.objs.Put(obj)
	data := (*buf)[:f.size]
	if f.err = s.fetchPayload(ctx, ns, f.hash, data, obj); f.err != nil {
		return f.err
	}
	f.plain = jsonscan.StringContent(data)
	return nil
}

// deliver calls fn for each entry of idx in turn, waiting for the payloads of
// those with references (items, in the same order), and then drops what the
// entry held of the window.
func (st *resolveStream) deliver(ctx context.Context, res *LeanResult, idx []int, items <-chan streamItem, fn func(i int, e ResolvedEntry) error) error {
	var pieces [][]byte
	for _, i := range idx {
		refs := res.Refs(i)
		if len(refs) == 0 {
			if err := fn(i, PlainEntry(res.Raw(i))); err != nil {
				return err
			}
			continue
		}
		var it streamItem
		select {
		case got, ok := <-items:
			if !ok {
				return fmt.Errorf("payloads of entry %d: %w", i, context.Cause(ctx))
			}
			it = got
		case <-ctx.Done():
			return ctx.Err()
		}
		if it.i != i {
			return fmt.Errorf("resolve payloads: entry %d sent for entry %d", it.i, i)
		}
		raw, plain, last := res.Raw(i), true, 0
		pieces = pieces[:0]
		for k, r := range refs {
			f := it.fetches[k]
			select {
			case <-f.done:
			case <-ctx.Done():
				st.release(it)
				return ctx.Err()
			}
			if f.err != nil {
				st.release(it)
				return f.err
			}
			pieces = append(pieces, raw[last:r.Off], (*f.buf)[:f.size])
			plain = plain && f.plain
			last = int(r.Off) + segment.RefLen
		}
		pieces = append(pieces, raw[last:])
		err := fn(i, ResolvedEntry{Pieces: pieces, Plain: plain})
		st.release(it)
		if err != nil {
			return err
		}
	}
	return nil
}

// release drops what the entry it holds of its fetches: a fetch no entry holds
// leaves the window, its buffer back to the pool.
func (st *resolveStream) release(it streamItem) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, f := range it.fetches {
		if containsFetch(it.fetches[:k], f) {
			continue
		}
		if f.users--; f.users > 0 {
			continue
		}
		delete(st.live, f.hash)
		if f.charge > 0 {
			st.budget.Release(f.charge)
		}
		select {
		case <-f.done: // finished: its buffer is free
			if f.buf != nil {
				st.bufs.Put(f.buf)
			}
		default:
		}
	}
}

// drain releases the entries sent but not delivered (after an error), once the
// scheduler and the fetches have ended.
func (st *resolveStream) drain(items <-chan streamItem) {
	for it := range items {
		st.release(it)
	}
}
