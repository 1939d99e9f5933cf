package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Legacy is the full-file mirror kept for backward compatibility: after every flush
// it uploads the tree's whole context file and log file, overwriting the previous
// copies (last writer wins), under the paths the files have below the tree's root
// (see sessiontree.FilesOf):
//
//	{Prefix}/{namespace}/agents/{agentId}/sessions/{sessionId}.jsonl      (context file)
//	{Prefix}/{namespace}/agents/{agentId}/sessions/{sessionId}.log.jsonl  (log file)
//
// Its cost grows with the square of the session length (every flush uploads
// everything so far) and concurrent replicas overwrite each other's entries; it is the
// baseline the segment Mirror is measured against. Upload is synchronous: it returns
// once both files are stored. Use a Prefix other than the segment store's, so that the
// legacy objects never mix with a session's segments.
//
// Each file is overwritten with one atomic Bucket.Replace.
type Legacy struct {
	// Bucket receives the files. Required.
	Bucket bucket.Bucket
	// Prefix is prepended (with "/") to every key; "" for none.
	Prefix string
}

var _ sessiontree.Uploader = (*Legacy)(nil)

// LegacyKeys returns the keys of the context file and the log file of ref: their
// paths relative to a SessionTree's root (sessiontree.FilesOf), with "/" for
// separator, under prefix.
func LegacyKeys(prefix string, ref transcript.TranscriptRef) (contextKey, logKey string) {
	rel := sessiontree.FilesOf("", ref)
	p := strings.Trim(prefix, "/")
	return path.Join(p, filepath.ToSlash(rel.Context)), path.Join(p, filepath.ToSlash(rel.Log))
}

// Upload stores the files b.Files.Context and b.Files.Log (each skipped when
// empty) under the LegacyKeys of b.Ref, replacing what was there.
func (l *Legacy) Upload(ctx context.Context, b sessiontree.Batch) error {
	if l.Bucket == nil {
		return errors.New("mirror: Legacy needs a bucket")
	}
	if err := b.Ref.Validate(); err != nil {
		return fmt.Errorf("mirror legacy upload: %w", err)
	}
	ck, lk := LegacyKeys(l.Prefix, b.Ref)
	for _, f := range []struct{ path, key string }{{b.Files.Context, ck}, {b.Files.Log, lk}} {
		if f.path == "" {
			continue
		}
		if err := l.replaceFile(ctx, f.key, f.path); err != nil {
			return fmt.Errorf("mirror legacy upload %s: %w", b.Ref, err)
		}
	}
	return nil
}

// AwaitQuiescence returns nil: Legacy uploads synchronously.
func (l *Legacy) AwaitQuiescence(context.Context) error { return nil }

// ReadsLocalFiles reports true: Legacy uploads the tree's files, so a SessionTree
// writes them before it hands over a batch.
func (l *Legacy) ReadsLocalFiles() bool { return true }

// PendingEntries returns nothing: Legacy holds no batch after Upload returns.
func (l *Legacy) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

// Close returns nil: Legacy holds no resources.
func (l *Legacy) Close(context.Context) error { return nil }

func (l *Legacy) replaceFile(ctx context.Context, key, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	opts := bucket.PutOptions{ContentType: "application/x-ndjson"}
	return l.Bucket.Replace(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}
