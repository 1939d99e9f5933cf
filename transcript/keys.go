package transcript

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/segment"
)

// Segment keys have the layout
//
//	{prefix}/{namespace}/{agentId}/{sessionId}/L{level}/{time}-{writerId}-{seq}-{hash}.jsonl.zst
//
// time is the UTC creation time, taken from the store's per-session hybrid logical
// clock (Clock), in the fixed-width form 20060102T150405.000000000Z, so lexical key
// order within a level is time order, and a key sorts after every key of the session
// its writer had seen; seq and hash are 16 lowercase hex
// digits (the writer's sequence number and the xxhash64 of the segment's entries), so a
// key is unique to its writer, sequence and content.

// SegmentExt ends every segment key.
const SegmentExt = ".jsonl.zst"

// keyTimeLayout is the fixed-width, lexically ordered time element of a segment key.
const keyTimeLayout = "20060102T150405.000000000Z"

// ErrNotSegmentKey is wrapped by ParseKey for a key that is not a segment key.
var ErrNotSegmentKey = errors.New("not a segment key")

// SegmentInfo describes one segment object, as parsed from its key.
type SegmentInfo struct {
	// Key is the full object key.
	Key string
	// Ref names the session the segment belongs to.
	Ref TranscriptRef
	// Level is 0 for segments written by a flush, n+1 for a compaction of level n.
	Level int
	// Time is when the writer created the segment (UTC).
	Time time.Time
	// WriterID names the writer that created it.
	WriterID string
	// Seq is the writer's sequence number.
	Seq uint64
	// Hash is the xxhash64 of the segment's uncompressed entries.
	Hash uint64
	// Size is the object size in bytes, when known from a listing.
	Size int64
	// Refs, in the description a write returns (AppendSegment, CommitSegment,
	// CreateSession), lists the payload references the segment was stored with
	// (segment.Meta.Refs: by entry, offsets in the stored entries), so that the
	// writer knows its entries' stored forms (StoredForm) without reading them;
	// nil when every entry is stored whole, and in listings.
	Refs []segment.PayloadRef
}

// EntryRefs returns the references of the segment's entry at position pos
// among Refs (none when it was stored whole).
func (i SegmentInfo) EntryRefs(pos int) []segment.PayloadRef {
	if i.Refs == nil || pos < 0 {
		return nil
	}
	return segment.EntryRefs(i.Refs, uint32(pos))
}

// keyPrefix joins the store prefix and elements into a key prefix ending in "/".
func keyPrefix(prefix string, elems ...string) string {
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte('/')
	}
	for _, e := range elems {
		b.WriteString(e)
		b.WriteByte('/')
	}
	return b.String()
}

// sessionPrefix is the key prefix of every object of ref (ref must be normalised).
func sessionPrefix(prefix string, ref TranscriptRef) string {
	return keyPrefix(prefix, ref.Namespace, ref.AgentID, ref.SessionID)
}

// segmentKey builds the key of a segment (ref must be normalised and valid).
func segmentKey(prefix string, ref TranscriptRef, level int, t time.Time, writerID string, seq, hash uint64) string {
	return fmt.Sprintf("%sL%d/%s-%s-%016x-%016x%s",
		sessionPrefix(prefix, ref), level, t.UTC().Format(keyTimeLayout), writerID, seq, hash, SegmentExt)
}

// ParseKey parses a segment key written under the store prefix prefix.
// It returns an error wrapping ErrNotSegmentKey for any other key.
func ParseKey(prefix, key string) (SegmentInfo, error) {
	bad := func(why string) (SegmentInfo, error) {
		return SegmentInfo{}, fmt.Errorf("%w: %q: %s", ErrNotSegmentKey, key, why)
	}
	rest := key
	if prefix != "" {
		if !strings.HasPrefix(rest, prefix+"/") {
			return bad("outside the store prefix")
		}
		rest = rest[len(prefix)+1:]
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 {
		return bad("wrong number of elements")
	}
	info := SegmentInfo{Key: key, Ref: TranscriptRef{Namespace: parts[0], AgentID: parts[1], SessionID: parts[2]}}
	if err := info.Ref.Validate(); err != nil {
		return bad(err.Error())
	}
	lv, ok := strings.CutPrefix(parts[3], "L")
	if !ok {
		return bad("no level element")
	}
	level, err := strconv.ParseUint(lv, 10, 8)
	if err != nil {
		return bad("bad level")
	}
	info.Level = int(level)
	name, ok := strings.CutSuffix(parts[4], SegmentExt)
	if !ok {
		return bad("no " + SegmentExt + " suffix")
	}
	// time (26) "-" writer "-" seq (16) "-" hash (16)
	const tl, hl = len(keyTimeLayout), 16
	if len(name) < tl+1+1+1+hl+1+hl || name[tl] != '-' || name[len(name)-hl-1] != '-' || name[len(name)-2*hl-2] != '-' {
		return bad("malformed name")
	}
	if info.Time, err = time.Parse(keyTimeLayout, name[:tl]); err != nil {
		return bad("bad time")
	}
	if info.Hash, err = parseHex16(name[len(name)-hl:]); err != nil {
		return bad("bad hash")
	}
	if info.Seq, err = parseHex16(name[len(name)-2*hl-1 : len(name)-hl-1]); err != nil {
		return bad("bad sequence")
	}
	info.WriterID = name[tl+1 : len(name)-2*hl-2]
	if err := ValidateWriterID(info.WriterID); err != nil {
		return bad(err.Error())
	}
	return info, nil
}

func parseHex16(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, errors.New("not 16 hex digits")
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, errors.New("not lowercase hex")
		}
	}
	return strconv.ParseUint(s, 16, 64)
}

// sessionRelKey returns the part of a segment key below its session: its level
// element and file name ("L0/{name}.jsonl.zst"). Compacted segments name their inputs
// this way, so a bucket copied under another prefix (or restored into another
// namespace) still knows which segments a compacted one supersedes. A full key and a
// relative one give the same result.
func sessionRelKey(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return key
	}
	j := strings.LastIndexByte(key[:i], '/')
	return key[j+1:]
}

// SessionOfKey returns the session part of a segment key, "{prefix}/{ns}/{agent}/
// {session}": the key without its last two elements (level and file name). It does
// not check the key; segments of one session give one value.
func SessionOfKey(key string) string {
	return path.Dir(path.Dir(key))
}

// SessionNameOfKey returns the "namespace/agent/session" part of a segment key: the
// last three elements of its session prefix, whatever the store prefix. It does not
// check the key.
func SessionNameOfKey(key string) string {
	parts := strings.Split(SessionOfKey(key), "/")
	if len(parts) > 3 {
		parts = parts[len(parts)-3:]
	}
	return strings.Join(parts, "/")
}
