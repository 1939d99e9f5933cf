package transcript

import (
	"container/list"
	"sync"

	"github.com/transcriptstore/transcript/segment"
)

// SegmentCache keeps decoded segments in memory by key, for the stores that
// share it (Config.SegmentCache), within a budget of bytes: the least recently
// used segment goes first.
//
// Why it is sound: a segment is never rewritten under its key, and the key names
// the checksum of what it holds (a read checks it, cached or not). So for as long
// as a key exists its segment is what the cache holds. A read still lists the
// session and takes from the cache only the segments that listing shows, so
// nothing deleted or compacted away comes back, and what was added since is
// fetched. A reader that opens the same sessions again and again (a replica
// behind a load balancer, a server without a handle for the session) then pays
// one listing and the new segments' GETs, not the session's whole size.
//
// What it keeps: the segments that ReadAll, ReadAllKnown, ReadNew and
// compaction fetch whole and verify, with the entries a read parsed of a
// level-0 segment. Segments that fail verification are never kept. Payloads
// are kept as references (they are put back into each read's result, not into
// the segment). The memory-lean reads (ReadLean, the CLI's) bypass it.
//
// Segments from the cache are shared: the Entry.Raw of a read's result may be
// the cache's bytes, which no caller may modify (as for any read's result).
// Share one cache only among stores over one bucket: the same key in a copy of
// the bucket may hold other (damaged) bytes, which a read of the copy must see.
type SegmentCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	ll    *list.List // of *cachedSegment, most recently used first
	items map[string]*list.Element
	hits  uint64
	miss  uint64
}

// cachedSegment is one segment the cache holds.
type cachedSegment struct {
	key    string
	seg    *segment.Segment
	parsed []parsedEntry // nil until a read parsed it (never for an indexed segment)
	size   int64
}

// SegmentCacheStats is what a SegmentCache holds and how it served reads.
type SegmentCacheStats struct {
	// Segments and Bytes are what the cache holds (Bytes as it accounts them:
	// the entries' bytes plus a fixed cost per entry).
	Segments int
	Bytes    int64
	// Hits and Misses count the segments reads took from the cache and those
	// they had to fetch.
	Hits, Misses uint64
}

// entryOverhead is what the cache accounts per entry beyond its bytes: the
// slice header of its raw bytes, its parsed ids and parent, its origin or index
// record.
const entryOverhead = 160

// NewSegmentCache returns a cache holding at most maxBytes of segments (as
// SegmentCacheStats.Bytes accounts them). A segment larger than that is not
// kept. maxBytes ≤ 0 gives a cache that keeps nothing.
func NewSegmentCache(maxBytes int64) *SegmentCache {
	return &SegmentCache{max: maxBytes, ll: list.New(), items: map[string]*list.Element{}}
}

// Stats returns what the cache holds and its hits and misses so far.
func (c *SegmentCache) Stats() SegmentCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SegmentCacheStats{Segments: c.ll.Len(), Bytes: c.size, Hits: c.hits, Misses: c.miss}
}

// get returns the segment cached under key and the entries parsed of it (nil
// when none were), or a nil segment.
func (c *SegmentCache) get(key string) (*segment.Segment, []parsedEntry) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		c.miss++
		return nil, nil
	}
	c.hits++
	c.ll.MoveToFront(el)
	cs := el.Value.(*cachedSegment)
	return cs.seg, cs.parsed
}

// put keeps seg under key, with its parsed entries when not nil, and evicts the
// least recently used segments past the budget. Putting a key again keeps the
// segment held and adds the parsed entries when it had none.
func (c *SegmentCache) put(key string, seg *segment.Segment, parsed []parsedEntry) {
	if c == nil || seg == nil {
		return
	}
	size := int64(len(key)) + entryOverhead
	for _, raw := range seg.Entries {
		size += int64(len(raw)) + entryOverhead
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		cs := el.Value.(*cachedSegment)
		if cs.parsed == nil && parsed != nil {
			cs.parsed = parsed
		}
		c.ll.MoveToFront(el)
		return
	}
	if size > c.max {
		return
	}
	c.items[key] = c.ll.PushFront(&cachedSegment{key: key, seg: seg, parsed: parsed, size: size})
	c.size += size
	for c.size > c.max {
		el := c.ll.Back()
		cs := el.Value.(*cachedSegment)
		c.ll.Remove(el)
		delete(c.items, cs.key)
		c.size -= cs.size
	}
}

// uncached returns s without its segment cache, for the reads that take the
// segments they fetch apart (the lean reads drop a segment's index once read).
func (s *Store) uncached() *Store {
	if s.cfg.SegmentCache == nil {
		return s
	}
	c := *s
	c.cfg.SegmentCache = nil
	return &c
}

// PackedReads returns a view of s for a reader of large sessions that keeps
// little of each segment's metadata: its reads decode the origins and entry
// index of a compacted segment packed (segment.Decoder.PackedIndex: read with
// Meta.OriginAt and Meta.IndexAt, about 4 bytes an entry, instead of
// Meta.Origins and Meta.Index, 64), and go past the segment cache
// (Config.SegmentCache), whose segments other reads share. ReadLean and the
// fetches ahead of it always read this way; transcript verify does too. Its
// reads return what the store's return. It shares the store's bucket, codecs
// and clock; closing it is not needed.
func (s *Store) PackedReads() *Store {
	c := *s.uncached()
	c.dec = s.dec.PackedIndex()
	c.ownCodec = false
	return &c
}
