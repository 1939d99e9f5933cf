package server

import (
	"container/list"
	"sync"

	"github.com/transcriptstore/transcript/repository"
)

// DefaultMaxCachedSessions is the default of Config.MaxCachedSessions.
const DefaultMaxCachedSessions = 256

// sessionCache keeps the session handles of recent appends (each with a repository of
// its own) between requests, so that an append to a session this server appended
// to before reads only what changed since (the head and the segments committed
// after it) instead of the whole session. The bucket stays the only state: a
// strict append always reads the head and commits with a conditional write, and a
// default-mode append lists the segments, so a handle that other servers moved
// past catches up, and one whose session was deleted answers not found and is
// dropped. At most max handles are kept, least recently used out first.
type sessionCache struct {
	mu    sync.Mutex
	max   int
	lru   *list.List // of *cachedSession, most recently used first
	byKey map[sessionKey]*list.Element
}

type sessionKey struct{ ns, id string }

// cachedSession is a cached session handle. users counts the requests using it; a handle
// evicted while in use is closed by its last user.
type cachedSession struct {
	key   sessionKey
	repo  *repository.Repository
	sess  *repository.Session
	users int
	gone  bool
}

func newSessionCache(max int) *sessionCache {
	return &sessionCache{max: max, lru: list.New(), byKey: map[sessionKey]*list.Element{}}
}

// acquire returns the cached handle of key, marked in use, or nil.
func (c *sessionCache) acquire(key sessionKey) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	hd := el.Value.(*cachedSession)
	hd.users++
	return hd
}

// add caches hd (in use by the caller) and evicts the least recently used
// handles over the bound. When key is cached already (a concurrent first
// append), it closes hd and returns the cached handle instead.
func (c *sessionCache) add(hd *cachedSession) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[hd.key]; ok {
		_ = hd.repo.Close()
		cur := el.Value.(*cachedSession)
		cur.users++
		c.lru.MoveToFront(el)
		return cur
	}
	hd.users = 1
	if c.max <= 0 {
		hd.gone = true // not cached: closed on release
		return hd
	}
	c.byKey[hd.key] = c.lru.PushFront(hd)
	for c.lru.Len() > c.max {
		c.removeLocked(c.lru.Back())
	}
	return hd
}

// release ends the caller's use of hd.
func (c *sessionCache) release(hd *cachedSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hd.users--
	if hd.gone && hd.users == 0 {
		_ = hd.repo.Close()
	}
}

// drop forgets the handle of key (its session was deleted or failed).
func (c *sessionCache) drop(key sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
	}
}

// close forgets every handle; those in use close when released.
func (c *sessionCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.removeLocked(c.lru.Back())
	}
}

func (c *sessionCache) removeLocked(el *list.Element) {
	hd := el.Value.(*cachedSession)
	c.lru.Remove(el)
	delete(c.byKey, hd.key)
	hd.gone = true
	if hd.users == 0 {
		_ = hd.repo.Close()
	}
}
