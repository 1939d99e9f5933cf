package sessiontree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/internal/fsutil"
)

// ErrUnsent is wrapped by the error of a Flush whose hand-over the uploader
// refused while the local files were written: the entries are durable locally
// and recorded in the unsent file (Files.Unsent), and a later Flush, in this
// process or after a restart, hands them over.
var ErrUnsent = errors.New("entries written locally, not handed over yet")

// ErrUnsentFile is wrapped by the error of a Load that finds an unsent file it
// cannot read (damaged, cut short, or of a version it does not know). Load
// refuses to guess which local entries the uploader lacks: counting them as
// handed over could keep them from the store for good. Removing the file makes
// Load count every local entry as handed over; check first that the store (or
// the uploader's outbox) holds them.
var ErrUnsentFile = errors.New("unreadable unsent file")

// Lines of an unsent file (see encodeUnsent).
const (
	unsentHeader       = "transcript-unsent 1"
	unsentHeaderPrefix = "transcript-unsent "
	unsentHeaderSent   = "header sent"
	unsentHeaderUnsent = "header unsent "
	unsentSumPrefix    = "xxh64 "
)

// unsentRecord is what an unsent file records: the entries the local files
// hold (or were about to hold) that the uploader has not accepted, in the order
// they are to be handed over, and whether the session header is among them.
type unsentRecord struct {
	// headerUnsent: the header was not handed over; it applies to the header
	// whose line has the xxhash64 headerSum only (a record left by a session
	// started anew is not another session's).
	headerUnsent bool
	headerSum    uint64
	// ids are the entry ids, in hand-over order, none empty.
	ids []string
}

// encodeUnsent returns the bytes of an unsent file, format version 1 (the
// package doc, "Unsent file", describes it). The encoding is canonical:
// decodeUnsent accepts exactly what encodeUnsent returns.
func encodeUnsent(r unsentRecord) []byte {
	n := len(unsentHeader) + len(unsentHeaderUnsent) + 16 + len(unsentSumPrefix) + 16 + 4
	for _, id := range r.ids {
		n += len(id) + 3
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	buf.WriteString(unsentHeader + "\n")
	if r.headerUnsent {
		fmt.Fprintf(buf, "%s%016x\n", unsentHeaderUnsent, r.headerSum)
	} else {
		buf.WriteString(unsentHeaderSent + "\n")
	}
	for _, id := range r.ids {
		buf.WriteString(strconv.Quote(id))
		buf.WriteByte('\n')
	}
	fmt.Fprintf(buf, "%s%016x\n", unsentSumPrefix, xxhash.Sum64(buf.Bytes()))
	return buf.Bytes()
}

// decodeUnsent parses an unsent file. Anything but exactly what encodeUnsent
// writes, a file cut short at any byte included, is an error wrapping
// ErrUnsentFile.
func decodeUnsent(data []byte) (unsentRecord, error) {
	var r unsentRecord
	body, sum, ok := cutChecksumLine(data)
	if !ok || len(sum) != 16 || fmt.Sprintf("%016x", xxhash.Sum64(body)) != sum {
		return r, fmt.Errorf("%w: no valid checksum line (cut short or damaged)", ErrUnsentFile)
	}
	lines := strings.Split(string(body[:len(body)-1]), "\n")
	if len(lines) < 2 {
		return r, fmt.Errorf("%w: no header line", ErrUnsentFile)
	}
	if lines[0] != unsentHeader {
		if strings.HasPrefix(lines[0], unsentHeaderPrefix) {
			return r, fmt.Errorf("%w: version %q unknown", ErrUnsentFile, strings.TrimPrefix(lines[0], unsentHeaderPrefix))
		}
		return r, fmt.Errorf("%w: not an unsent file", ErrUnsentFile)
	}
	switch h := lines[1]; {
	case h == unsentHeaderSent:
	case strings.HasPrefix(h, unsentHeaderUnsent):
		hex := strings.TrimPrefix(h, unsentHeaderUnsent)
		v, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || fmt.Sprintf("%016x", v) != hex {
			return r, fmt.Errorf("%w: bad header line %q", ErrUnsentFile, h)
		}
		r.headerUnsent, r.headerSum = true, v
	default:
		return r, fmt.Errorf("%w: bad header line %q", ErrUnsentFile, h)
	}
	r.ids = make([]string, 0, len(lines)-2)
	for k, l := range lines[2:] {
		id, err := strconv.Unquote(l)
		if err != nil || id == "" || strconv.Quote(id) != l {
			return r, fmt.Errorf("%w: line %d: bad entry id %q", ErrUnsentFile, k+3, l)
		}
		r.ids = append(r.ids, id)
	}
	return r, nil
}

// readUnsentFile reads the unsent file at path: false when there is none.
func readUnsentFile(path string) (unsentRecord, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return unsentRecord{}, false, nil
	}
	if err != nil {
		return unsentRecord{}, false, fmt.Errorf("read unsent file: %w", err)
	}
	r, err := decodeUnsent(data)
	if err != nil {
		return r, false, fmt.Errorf("%s: %w", path, err)
	}
	return r, true, nil
}

// recordsUnsent reports whether the tree keeps an unsent file: it hands
// batches to an uploader before it writes the local files (for one that reads
// the local files, or without one, the files are all there is to hand over).
func (t *Tree) recordsUnsent() bool {
	return t.cfg.Uploader != nil && !t.cfg.Uploader.ReadsLocalFiles()
}

// recordUnsent makes the unsent file durable before a flush writes local
// files while entries (or the header) wait for the uploader: a hand-over the
// uploader refused, or entries appended while it ran. A crash at any later
// point then leaves the local files with a record of what they hold that the
// store may lack; written atomically (temp file, fsync, rename, fsync of the
// directory), the record is the old one or the new one, never a torn one.
// When nothing waits, or nothing is about to be written locally, it writes
// nothing: the flush whose hand-over succeeded pays nothing. t.mu is held.
func (t *Tree) recordUnsent() error {
	if !t.recordsUnsent() || (len(t.pendingUpload) == 0 && t.headerUploaded) {
		return nil
	}
	if len(t.pendingLocal) == 0 && len(t.replaced) == 0 && t.headerInLog && t.headerInCtx {
		return nil // the local files get nothing the record does not cover already
	}
	r := unsentRecord{ids: make([]string, len(t.pendingUpload))}
	for k, i := range t.pendingUpload {
		r.ids[k] = t.entries[i].ID()
	}
	if !t.headerUploaded {
		r.headerUnsent, r.headerSum = true, xxhash.Sum64(t.header.Raw())
	}
	data := encodeUnsent(r)
	if err := os.MkdirAll(filepath.Dir(t.files.Unsent), 0o755); err != nil {
		return fmt.Errorf("flush %s: create session directory: %w", t.ref, err)
	}
	if err := fsutil.WriteFileAtomic(t.files.Unsent, t.cfg.NoSync, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return fmt.Errorf("flush %s: record unsent entries: %w", t.ref, err)
	}
	t.unsentOnDisk = true
	return nil
}

// dropUnsent removes the unsent file once nothing it records waits for the
// uploader any more. A removal lost to a crash costs a second hand-over of
// entries the uploader has (harmless: identical entries collapse), never an
// entry, so the directory is not synced. t.mu is held.
func (t *Tree) dropUnsent() error {
	if !t.unsentOnDisk || len(t.pendingUpload) > 0 || !t.headerUploaded {
		return nil
	}
	if err := os.Remove(t.files.Unsent); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("flush %s: remove unsent file: %w", t.ref, err)
	}
	t.unsentOnDisk = false
	return nil
}

// applyUnsent reads the unsent file beside the loaded local files, if any, and
// makes the entries it names pending for upload again, in its order (the log is
// merged first when the context file lacks one of them), and the header too
// when the record names this session's header. An id neither file holds was
// recorded by a flush that crashed before its local write: that flush never
// returned, and the entry is not there to hand over. Entries the uploader
// reports it accepted (PendingEntries; a crash after a hand-over, before the
// record was removed) stay handed over; Pull does the same for those the store
// holds. A damaged file fails the load (ErrUnsentFile).
func (t *Tree) applyUnsent(ctx context.Context, rep *LoadReport) error {
	r, ok, err := readUnsentFile(t.files.Unsent)
	if err != nil || !ok {
		return err
	}
	t.unsentOnDisk = true
	for _, id := range r.ids {
		if _, held := t.byID[id]; !held {
			if err := t.mergeLogReport(ctx, rep); err != nil {
				return err
			}
			break
		}
	}
	accepted := t.acceptedByUploader(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	pending := make(map[int]bool, len(t.pendingUpload))
	for _, i := range t.pendingUpload {
		pending[i] = true
	}
	for _, id := range r.ids {
		i, held := t.byID[id]
		if !held || pending[i] || accepted[string(t.entries[i].Raw())] {
			continue
		}
		t.flags[i] &^= uploaded
		t.pendingUpload = append(t.pendingUpload, i)
		pending[i] = true
	}
	if r.headerUnsent && r.headerSum == xxhash.Sum64(t.header.Raw()) && !accepted[string(t.header.Raw())] {
		t.headerUploaded = false
	}
	return nil
}

// acceptedByUploader returns the raw lines the uploader accepted for the
// session and the store may lack (Uploader.PendingEntries). It only spares a
// second hand-over: when the uploader cannot tell, the answer is none, and
// the record's entries are handed over again.
func (t *Tree) acceptedByUploader(ctx context.Context) map[string]bool {
	if t.cfg.Uploader == nil {
		return nil
	}
	raws, err := t.cfg.Uploader.PendingEntries(ctx, t.ref)
	if err != nil {
		return nil
	}
	out := make(map[string]bool, len(raws))
	for _, raw := range raws {
		out[string(raw)] = true
	}
	return out
}

// UnsentPath returns the path of the unsent file beside the local files (see
// Files.Unsent).
func (t *Tree) UnsentPath() string { return t.files.Unsent }
