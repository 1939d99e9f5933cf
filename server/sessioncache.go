package server

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// DefaultMaxCachedSessions is the default of Config.MaxCachedSessions.
const DefaultMaxCachedSessions = 256

// DefaultMaxCachedBytes is the default of Config.MaxCachedBytes.
const DefaultMaxCachedBytes = 512 << 20

// HeldPageAge is how long after a strict session's handle was last brought up
// to date with the bucket a page of entries that lies wholly inside what the
// handle holds (it ends before the handle's last entry) is answered from the
// handle, without a request to the bucket. In a strict session a sequence
// number names the same entry for ever, so such a page holds what the bucket
// holds at its numbers; what may lag, by at most this age, is the page's
// entryCount and head, and a deletion (or a deletion and re-creation) of the
// session by another server. A page that reaches the end of what the handle
// holds, every request on a default-mode session and every other request read
// the bucket as before.
const HeldPageAge = time.Second

// sessionCache keeps session handles (each with a repository of its own) between
// requests, so that a request on a session this server served before reads only
// what changed since instead of the whole session: reads refresh the handle
// (repository.Session.Refresh: the head and the segments committed after it, or
// the newest keys), appends read the head or list the session before they write.
// The bucket stays the only state: every request brings its handle up to date
// with the bucket (or joins a refresh that started after it arrived), so a handle
// that other servers moved past catches up, and one whose session was deleted
// answers not found and is dropped; the one exception is a page of a strict
// session that the handle holds (HeldPageAge). At most max handles are kept,
// holding at most maxBytes of entries in all (repository.Session.HeldBytes, as
// of each handle's last use; the handle used last is kept whatever its size),
// least recently used out first.
type sessionCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64      // the sum of the cached handles' size
	lru      *list.List // of *cachedSession, most recently used first
	byKey    map[sessionKey]*list.Element

	// heldAge is HeldPageAge (tests shorten it); now is the clock of the
	// handles' read times, kept as durations since base (monotonic).
	heldAge time.Duration
	now     func() time.Time
	base    time.Time
}

type sessionKey struct{ ns, id string }

// cachedSession is a cached session handle. users counts the requests using it; a
// handle evicted while in use is closed by its last user.
type cachedSession struct {
	key   sessionKey
	repo  *repository.Repository
	sess  *repository.Session
	users int
	gone  bool
	// size is the handle's HeldBytes when the cache last looked (c.mu).
	size int64

	// Refreshes of the handle are serialised by rmu and numbered: started counts
	// those begun, done is the number of the last that completed. A request that
	// finds done above the count it saw on arrival is current without a read of
	// its own.
	rmu     sync.Mutex
	started atomic.Uint64
	done    uint64
	// readAt is when the last read that brought the handle up to date with
	// the bucket began (cache.clock).
	readAt atomic.Int64
	cache  *sessionCache

	// hub, when streams watch the session, is their shared watcher (see hub).
	hubMu sync.Mutex
	hub   *hub
}

func newSessionCache(max int, maxBytes int64) *sessionCache {
	return &sessionCache{max: max, maxBytes: maxBytes, lru: list.New(), byKey: map[sessionKey]*list.Element{},
		heldAge: HeldPageAge, now: time.Now, base: time.Now()}
}

// clock is the time since the cache's base.
func (c *sessionCache) clock() time.Duration { return c.now().Sub(c.base) }

// holds reports whether hd answers a page of limit entries after sequence
// number after without a request to the bucket (see HeldPageAge): its session
// is strict, it holds entries past the page's end, and it was brought up to
// date less than heldAge ago.
func (c *sessionCache) holds(hd *cachedSession, after, limit int) bool {
	if c.clock()-time.Duration(hd.readAt.Load()) >= c.heldAge || !hd.sess.Strict() {
		return false
	}
	return after < hd.sess.Page(0, 0).Count-limit
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
// request), it closes hd and returns the cached handle instead.
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
	c.resizeLocked(hd)
	return hd
}

// resizeLocked records hd's size as it is now, when hd is cached, and evicts the
// least recently used handles while the cache is over its bounds; it keeps the
// most recently used one, whatever its size.
func (c *sessionCache) resizeLocked(hd *cachedSession) {
	if !hd.gone {
		size := hd.sess.HeldBytes()
		c.bytes += size - hd.size
		hd.size = size
	}
	for c.lru.Len() > c.max || c.lru.Len() > 1 && c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back())
	}
}

// release ends the caller's use of hd.
func (c *sessionCache) release(hd *cachedSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hd.users--
	if hd.gone && hd.users == 0 {
		_ = hd.repo.Close()
		return
	}
	c.resizeLocked(hd) // its request may have made it hold more
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
	c.bytes -= hd.size
	hd.size = 0
	hd.gone = true
	if hd.users == 0 {
		_ = hd.repo.Close()
	}
}

// refresh brings hd up to date with the bucket (repository.Session.Refresh),
// unless a refresh that started after this call did completes meanwhile; the
// streams watching the session are told when the session changed.
func (hd *cachedSession) refresh(ctx context.Context) error {
	arrived := hd.started.Load()
	hd.rmu.Lock()
	defer hd.rmu.Unlock()
	if hd.done > arrived {
		return nil
	}
	n := hd.started.Add(1)
	before := hd.sess.Page(0, 0)
	began := hd.cache.clock()
	if err := hd.sess.Refresh(ctx); err != nil {
		return err
	}
	hd.done = n
	hd.readAt.Store(int64(began))
	if after := hd.sess.Page(0, 0); after.Count != before.Count || after.Epoch != before.Epoch {
		hd.changed()
	}
	return nil
}

// changed tells the streams watching the session (if any) that it changed.
func (hd *cachedSession) changed() {
	hd.hubMu.Lock()
	h := hd.hub
	hd.hubMu.Unlock()
	if h != nil {
		h.notify()
	}
}

// openHandle returns the handle of session id of repo's owner, marked in use: the
// cached one, or a new one (with a repository of its own, read whole and
// cached). fresh reports a handle read by this call. The caller releases it.
func (s *Server) openHandle(ctx context.Context, repo *repository.Repository, id string) (hd *cachedSession, fresh bool, err error) {
	key := sessionKey{ns: repo.Namespace(), id: id}
	if hd := s.sessions.acquire(key); hd != nil {
		return hd, false, nil
	}
	own, err := s.cfg.Repositories.Repository(repo.Owner())
	if err != nil {
		return nil, false, err
	}
	began := s.sessions.clock()
	sess, err := own.Open(ctx, id)
	if err != nil {
		_ = own.Close()
		return nil, false, err
	}
	return s.sessions.add(s.sessions.handle(key, own, sess, began)), true, nil
}

// handle returns a new handle of sess, read from the bucket at began.
func (c *sessionCache) handle(key sessionKey, own *repository.Repository, sess *repository.Session, began time.Duration) *cachedSession {
	hd := &cachedSession{key: key, repo: own, sess: sess, cache: c}
	hd.readAt.Store(int64(began))
	return hd
}

// current returns the handle of session id of repo's owner brought up to date
// with the bucket (read whole when it was not cached, else refreshed), marked in
// use; the caller releases it. A session that is gone is dropped from the cache.
func (s *Server) current(ctx context.Context, repo *repository.Repository, id string) (*cachedSession, error) {
	hd, fresh, err := s.openHandle(ctx, repo, id)
	if err != nil || fresh {
		return hd, err
	}
	return s.catchUp(ctx, hd)
}

// pageHandle returns the handle that answers a page of limit entries after
// sequence number after of session id: current's, except that a handle that
// holds the page (sessionCache.holds, HeldPageAge) answers as it is.
func (s *Server) pageHandle(ctx context.Context, repo *repository.Repository, id string, after, limit int) (*cachedSession, error) {
	hd, fresh, err := s.openHandle(ctx, repo, id)
	if err != nil || fresh || s.sessions.holds(hd, after, limit) {
		return hd, err
	}
	return s.catchUp(ctx, hd)
}

// catchUp brings hd, in use by the caller, up to date with the bucket. On an
// error it releases hd, and drops it from the cache when its session is gone.
func (s *Server) catchUp(ctx context.Context, hd *cachedSession) (*cachedSession, error) {
	if err := hd.refresh(ctx); err != nil {
		s.sessions.release(hd)
		if errors.Is(err, bucket.ErrNotFound) {
			s.sessions.drop(hd.key)
		}
		return nil, err
	}
	return hd, nil
}

// keep caches sess, a session this request created with its own repository own,
// for the requests that follow (a client reads a session it created or forked).
func (s *Server) keep(own *repository.Repository, sess *repository.Session) {
	key := sessionKey{ns: own.Namespace(), id: sess.ID()}
	s.sessions.drop(key) // an older handle of a session deleted since
	s.sessions.release(s.sessions.add(s.sessions.handle(key, own, sess, s.sessions.clock())))
}
