package sessiontree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/internal/fsutil"
)

// The origins file ({session}.origins) holds the origin records of the entries
// the local files hold from the store (see originLog for the records): a header
// line, then records, appended by every pull that learns origins. It is only
// ever read up to the length the segments file beside it records, and only when
// those bytes have the checksum recorded with it: a tail written by a pull whose
// segments file was not (a crash between the two) is ignored, and a file cut
// short, lost or replaced since makes the segments file's origins unusable (the
// next pull reads the whole session, which gives every origin again). A tree
// that loaded it writes it again whole before its first append, so a tail it
// ignored never stays.
const originsHeader = "transcript-origins 1"

// errOriginsChanged reports an origins file shorter than the tree wrote it.
var errOriginsChanged = errors.New("origins file shorter than written")

// writeOriginsFile replaces path with data (atomically; fsynced unless noSync).
func writeOriginsFile(path string, data []byte, noSync bool) error {
	return fsutil.WriteFileAtomic(path, noSync, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// appendOrigins writes data at offset size of the existing file path, cutting
// anything after size first (a tail of an append the segments file never
// named), and fsyncs unless noSync. A file shorter than size is not the one
// the tree wrote: errOriginsChanged.
func appendOrigins(path string, size int64, data []byte, noSync bool) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Size() < size {
		return fmt.Errorf("%s: %w", path, errOriginsChanged)
	}
	if st.Size() > size {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("truncate %s: %w", path, err)
		}
	}
	if _, err := f.WriteAt(data, size); err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	if noSync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// readOriginsFile reads the records of the first size bytes of the origins
// file path, in file order, if those bytes have the xxhash64 sum and are well
// formed; false otherwise (missing, shorter, changed or damaged file).
func readOriginsFile(path string, size int64, sum uint64) ([]originRecord, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() < size {
		return nil, false
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil || xxhash.Sum64(data) != sum {
		return nil, false
	}
	body, ok := bytes.CutPrefix(data, []byte(originsHeader+"\n"))
	if !ok {
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	return readOrigins(sc)
}
