package server

import (
	"container/list"
	"sync"

	"github.com/transcriptstore/transcript/repository"
)

// DefaultMaxCachedSessions is the default of Config.MaxCachedSessions.
const DefaultMaxCachedSessions = 256

// handles keeps the session handles of recent appends (each with a repository of
// its own) between requests, so that an append to a session this server appended
// to before reads only what changed since (the head and the segments committed
// after it) instead of the whole session. The bucket stays the only state: a
// strict append always reads the head and commits with a conditional write, and a
// default-mode append lists the segments, so a handle that other servers moved
// past catches up, and one whose session was deleted answers not found and is
// dropped. At most max handles are kept, least recently used out first.
type handles struct {
	mu    sync.Mutex
	max   int
	lru   *list.List // of *handle, most recently used first
	byKey map[handleKey]*list.Element
}

type handleKey struct{ ns, id string }

// handle is a cached session handle. users counts the requests using it; a handle
// evicted while in use is closed by its last user.
type handle struct {
	key   handleKey
	repo  *repository.Repository
	sess  *repository.Session
	users int
	gone  bool
}

func newHandles(max int) *handles {
	return &handles{max: max, lru: list.New(), byKey: map[handleKey]*list.Element{}}
}

// acquire returns the cached handle of key, marked in use, or nil.
func (h *handles) acquire(key handleKey) *handle {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byKey[key]
	if !ok {
		return nil
	}
	h.lru.MoveToFront(el)
	hd := el.Value.(*handle)
	hd.users++
	return hd
}

// add caches hd (in use by the caller) and evicts the least recently used
// handles over the bound. When key is cached already (a concurrent first
// append), it closes hd and returns the cached handle instead.
func (h *handles) add(hd *handle) *handle {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[hd.key]; ok {
		_ = hd.repo.Close()
		cur := el.Value.(*handle)
		cur.users++
		h.lru.MoveToFront(el)
		return cur
	}
	hd.users = 1
	if h.max <= 0 {
		hd.gone = true // not cached: closed on release
		return hd
	}
	h.byKey[hd.key] = h.lru.PushFront(hd)
	for h.lru.Len() > h.max {
		h.removeLocked(h.lru.Back())
	}
	return hd
}

// release ends the caller's use of hd.
func (h *handles) release(hd *handle) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd.users--
	if hd.gone && hd.users == 0 {
		_ = hd.repo.Close()
	}
}

// drop forgets the handle of key (its session was deleted or failed).
func (h *handles) drop(key handleKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byKey[key]; ok {
		h.removeLocked(el)
	}
}

// close forgets every handle; those in use close when released.
func (h *handles) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.lru.Len() > 0 {
		h.removeLocked(h.lru.Back())
	}
}

func (h *handles) removeLocked(el *list.Element) {
	hd := el.Value.(*handle)
	h.lru.Remove(el)
	delete(h.byKey, hd.key)
	hd.gone = true
	if hd.users == 0 {
		_ = hd.repo.Close()
	}
}
