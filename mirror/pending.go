package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/transcriptstore/transcript/transcript"
)

// PendingEntries returns the entries of ref's segments in the outbox (accepted and
// not yet stored), in key order, which for one writer is flush order. A segment
// uploaded meanwhile is skipped: the store has it. A SessionTree opened without
// local files reads them besides the store (see sessiontree.Uploader).
func (m *Mirror) PendingEntries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	ref = ref.Norm()
	// A segment that Upload is still appending is not accepted yet; one held in
	// memory (all but files found under pending/ at start) is read from there.
	m.mu.Lock()
	held := map[string][]byte{}
	var keys []string
	for j := range m.pending {
		if info, err := transcript.ParseKey(m.cfg.Store.Prefix(), j.key); err == nil && info.Ref == ref && j.written {
			keys = append(keys, j.key)
			held[j.key] = j.data
		}
	}
	m.mu.Unlock()
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Strings(keys)
	var out [][]byte
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data := held[k]
		var err error
		if data == nil {
			data, err = m.box.read(k)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // stored and removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read pending segment %s: %w", k, err)
		}
		seg, err := m.cfg.Store.DecodeSegment(data)
		if err != nil {
			return nil, fmt.Errorf("read pending segment %s: %w", k, err)
		}
		out = append(out, seg.Entries...)
	}
	return out, nil
}

// ReadsLocalFiles reports false: the Mirror uploads the batch's entries, so a
// SessionTree hands a batch over before it writes its local files.
func (m *Mirror) ReadsLocalFiles() bool { return false }
