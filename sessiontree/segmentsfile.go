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

// segmentsHeader is the first line of a segments file; segmentsHeaderV1 that of
// a file written before the frontier and leaf lines existed (still read).
const (
	segmentsHeader   = "transcript-segments 2"
	segmentsHeaderV1 = "transcript-segments 1"
)

// Line prefixes of a segments file.
const (
	frontierPrefix = "frontier "
	leafPrefix     = "leaf "
)

// segmentsFile is what a segments file ({session}.segments) records of the store
// for the local files beside it. It only saves work: a missing, stale or damaged
// one costs a fuller read, never an entry.
type segmentsFile struct {
	// have is the set of segments whose entries the local files hold.
	have transcript.SegmentSet
	// frontier is the tree's frontier origin (see storeState.frontier).
	frontier transcript.Origin
	// leaf is the id of the tree's active leaf when the file was written ("" for
	// a null leaf), when leafKnown. The local files hold entries in the order
	// they arrived, so after a pull that left the leaf on an earlier entry (see
	// moveLeaf) their last entry is not the leaf: a tree loading files that are
	// as this file describes them takes the leaf from here.
	leaf      string
	leafKnown bool
	// sizes records the sizes of the local files it describes (see localSizes).
	sizes string
}

// writeSegmentsFile replaces path with f: a header line, the sizes line, a line
// with the frontier origin ("frontier {pos} {key}", or "frontier -" when
// unknown), a line with the leaf ("leaf {quoted id}", "leaf null" or "leaf ?"
// when unknown), one relative segment key per line, and a line with the xxhash64
// of everything before it.
func writeSegmentsFile(path string, f segmentsFile) error {
	var buf bytes.Buffer
	buf.WriteString(segmentsHeader + "\n")
	buf.WriteString(f.sizes + "\n")
	if f.frontier.Key == "" {
		buf.WriteString(frontierPrefix + "-\n")
	} else {
		fmt.Fprintf(&buf, "%s%d %s\n", frontierPrefix, f.frontier.Pos, f.frontier.Key)
	}
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
	fmt.Fprintf(&buf, "xxh64 %016x\n", xxhash.Sum64(buf.Bytes()))
	return fsutil.WriteFileAtomic(path, true, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// readSegmentsFile reads a segments file; a missing, unreadable or damaged one
// is the zero segmentsFile (the next pull reads more, never less). A version 1
// file has no frontier and no leaf.
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
	if !sc.Scan() {
		return segmentsFile{}
	}
	version := sc.Text()
	if version != segmentsHeader && version != segmentsHeaderV1 || !sc.Scan() || !strings.HasPrefix(sc.Text(), "files ") {
		return segmentsFile{}
	}
	f := segmentsFile{sizes: sc.Text()}
	if version == segmentsHeader {
		if !sc.Scan() {
			return segmentsFile{}
		}
		if f.frontier, ok = parseFrontier(sc.Text()); !ok || !sc.Scan() {
			return segmentsFile{}
		}
		if f.leaf, f.leafKnown, ok = parseLeaf(sc.Text()); !ok {
			return segmentsFile{}
		}
	}
	var keys []string
	for sc.Scan() {
		if k := sc.Text(); k != "" {
			keys = append(keys, k)
		}
	}
	f.have = transcript.NewSegmentSet(keys...)
	return f
}

// parseFrontier parses a frontier line (see writeSegmentsFile).
func parseFrontier(line string) (transcript.Origin, bool) {
	rest, ok := strings.CutPrefix(line, frontierPrefix)
	if !ok {
		return transcript.Origin{}, false
	}
	if rest == "-" {
		return transcript.Origin{}, true
	}
	pos, key, ok := strings.Cut(rest, " ")
	n, err := strconv.Atoi(pos)
	if !ok || err != nil || n < 0 || key == "" {
		return transcript.Origin{}, false
	}
	return transcript.Origin{Key: key, Pos: n}, true
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
