package sessiontree

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript"
)

// segmentsHeader is the first line of a segments file. Older versions are
// still read: segmentsHeaderV3 held the origin records itself (in a section
// rewritten whole with every file) instead of naming the origins file;
// segmentsHeaderV2 and segmentsHeaderV1 those of files written before origins
// were kept (version 2 had a frontier line instead) and before the leaf line
// existed. Those two record no origins (see Tree.loadStoredSet).
const (
	segmentsHeader   = "transcript-segments 4"
	segmentsHeaderV3 = "transcript-segments 3"
	segmentsHeaderV2 = "transcript-segments 2"
	segmentsHeaderV1 = "transcript-segments 1"
)

// Line prefixes of a segments file.
const (
	frontierPrefix = "frontier "
	leafPrefix     = "leaf "
	originsLine    = "origins"
	originsPrefix  = "origins "
	originKeyLine  = "at "
)

// segmentsFile is what a segments file ({session}.segments) records of the store
// for the local files beside it. It only saves work: a missing, stale or damaged
// one costs a fuller read, never an entry.
type segmentsFile struct {
	// have is the set of segments whose entries the local files hold.
	have transcript.SegmentSet
	// origins are the origins of the entries the local files hold from those
	// segments, when withOrigins: as read, in file order (of two records of one
	// id the later counts). Version 3 held them inline; version 4 names the
	// first originsSize bytes of the origins file, whose xxhash64 is originsSum
	// (loadOrigins reads them).
	origins     []originRecord
	withOrigins bool
	originsSize int64
	originsSum  uint64
	// leaf is the id of the tree's active leaf when the file was written ("" for
	// a null leaf), when leafKnown. The local files hold entries in the order
	// they arrived, so after a pull that left the leaf on an earlier entry (see
	// canonical.go) their last entry is not the leaf: a tree loading files that are
	// as this file describes them takes the leaf from here.
	leaf      string
	leafKnown bool
	// sizes records the sizes of the local files it describes (see localSizes).
	sizes string
}

// originRecord is the origin of one entry, for the version whose bytes have
// the xxhash64 sum.
type originRecord struct {
	id     string
	origin transcript.Origin
	sum    uint64
}

// writeSegmentsFile replaces path with f: a header line, the sizes line, a line
// with the leaf ("leaf {quoted id}", "leaf null" or "leaf ?" when unknown), one
// relative segment key per line, the line "origins {size} {sum}" naming the
// bytes of the origins file that count (sum their xxhash64 in 16 hex digits),
// and a line with the xxhash64 of everything before it.
func writeSegmentsFile(path string, f segmentsFile) error {
	var buf bytes.Buffer
	buf.WriteString(segmentsHeader + "\n")
	buf.WriteString(f.sizes + "\n")
	switch {
	case !f.leafKnown:
		buf.WriteString(leafPrefix + "?\n")
	case f.leaf == "":
		buf.WriteString(leafPrefix + "null\n")
	default:
		buf.WriteString(leafPrefix + strconv.Quote(f.leaf) + "\n")
	}
	for _, k := range f.have.Keys() {
		buf.WriteString(k)
		buf.WriteByte('\n')
	}
	fmt.Fprintf(&buf, "%s%d %016x\n", originsPrefix, f.originsSize, f.originsSum)
	fmt.Fprintf(&buf, "xxh64 %016x\n", xxhash.Sum64(buf.Bytes()))
	return fsutil.WriteFileAtomic(path, true, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// readSegmentsFile reads a segments file; a missing, unreadable or damaged one
// is the zero segmentsFile (the next pull reads more, never less). A version 1
// file has no leaf; versions 1 and 2 have no origins; the origins a version 4
// file names are read by loadOrigins.
func readSegmentsFile(path string) segmentsFile {
	data, err := os.ReadFile(path)
	if err != nil {
		return segmentsFile{}
	}
	body, sum, ok := cutChecksumLine(data)
	if !ok || fmt.Sprintf("%016x", xxhash.Sum64(body)) != sum {
		return segmentsFile{}
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		return segmentsFile{}
	}
	version := sc.Text()
	if version != segmentsHeader && version != segmentsHeaderV3 && version != segmentsHeaderV2 && version != segmentsHeaderV1 ||
		!sc.Scan() || !strings.HasPrefix(sc.Text(), "files ") {
		return segmentsFile{}
	}
	f := segmentsFile{sizes: sc.Text()}
	if version == segmentsHeaderV2 {
		// The frontier line: an older way of placing increments, not used now.
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), frontierPrefix) {
			return segmentsFile{}
		}
	}
	if version != segmentsHeaderV1 {
		if !sc.Scan() {
			return segmentsFile{}
		}
		if f.leaf, f.leafKnown, ok = parseLeaf(sc.Text()); !ok {
			return segmentsFile{}
		}
	}
	var keys []string
	for sc.Scan() {
		k := sc.Text()
		if k == originsLine && version == segmentsHeaderV3 {
			if f.origins, ok = readOrigins(sc); !ok {
				return segmentsFile{}
			}
			f.withOrigins = true
			break
		}
		if rest, named := strings.CutPrefix(k, originsPrefix); named && version == segmentsHeader {
			if f.originsSize, f.originsSum, ok = parseOriginsLine(rest); !ok || sc.Scan() {
				return segmentsFile{}
			}
			break
		}
		if k != "" {
			keys = append(keys, k)
		}
	}
	if (version == segmentsHeaderV3 && !f.withOrigins) || (version == segmentsHeader && f.originsSize == 0) {
		return segmentsFile{}
	}
	f.have = transcript.NewSegmentSet(keys...)
	return f
}

// readOrigins reads the origin records that follow the "origins" line, to the
// end of sc, in file order; false if one is malformed.
func readOrigins(sc *bufio.Scanner) ([]originRecord, bool) {
	var out []originRecord
	key := ""
	for sc.Scan() {
		line := sc.Text()
		if k, ok := strings.CutPrefix(line, originKeyLine); ok {
			if k == "" {
				return nil, false
			}
			key = k
			continue
		}
		pos, rest, ok1 := strings.Cut(line, " ")
		sum, id, ok2 := strings.Cut(rest, " ")
		n, err1 := strconv.Atoi(pos)
		s, err2 := strconv.ParseUint(sum, 16, 64)
		uid, err3 := strconv.Unquote(id)
		if key == "" || !ok1 || !ok2 || err1 != nil || n < 0 || err2 != nil || err3 != nil || uid == "" {
			return nil, false
		}
		out = append(out, originRecord{id: uid, origin: transcript.Origin{Key: key, Pos: n}, sum: s})
	}
	return out, sc.Err() == nil
}

// parseOriginsLine parses what follows "origins " in a version 4 file: the
// size and the checksum of the origins file's bytes that count.
func parseOriginsLine(rest string) (int64, uint64, bool) {
	size, sum, ok := strings.Cut(rest, " ")
	n, err1 := strconv.ParseInt(size, 10, 64)
	s, err2 := strconv.ParseUint(sum, 16, 64)
	return n, s, ok && err1 == nil && err2 == nil && n > 0 && len(sum) == 16
}

// loadOrigins reads the origin records a version 4 file names from the origins
// file at path; when they cannot be read as named (the file is missing, shorter
// or changed), f has no origins, as a version 2 file: the tree does not take its
// set (Tree.loadStoredSet), while its leaf and sizes still describe the local
// files.
func (f *segmentsFile) loadOrigins(path string) {
	if f.withOrigins || f.originsSize == 0 {
		return
	}
	f.origins, f.withOrigins = readOriginsFile(path, f.originsSize, f.originsSum)
}

// parseLeaf parses a leaf line (see writeSegmentsFile): the id ("" for null),
// whether it is known, and whether the line is well formed.
func parseLeaf(line string) (id string, known, ok bool) {
	rest, ok := strings.CutPrefix(line, leafPrefix)
	switch {
	case !ok:
		return "", false, false
	case rest == "?":
		return "", false, true
	case rest == "null":
		return "", true, true
	}
	id, err := strconv.Unquote(rest)
	return id, err == nil && id != "", err == nil && id != ""
}

// cutChecksumLine splits data into what precedes its last line and the checksum
// that line ("xxh64 {hex}\n") holds.
func cutChecksumLine(data []byte) ([]byte, string, bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, "", false
	}
	sum, ok := strings.CutPrefix(string(data[i+1:len(data)-1]), "xxh64 ")
	return data[:i+1], sum, ok
}
