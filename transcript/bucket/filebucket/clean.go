package filebucket

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CleanTemp removes the temp files that crashed or killed writers left behind, if
// they are older than olderThan (use a margin longer than any upload, so that a
// write in progress in another process keeps its file), and prunes the directories
// that become empty. It returns how many files it removed. Temp files are never
// visible as objects, so running it is housekeeping, not a correctness step.
func (b *Bucket) CleanTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	err := filepath.WalkDir(b.root, func(name string, de fs.DirEntry, err error) error {
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.IsDir() || !strings.HasPrefix(de.Name(), TempPrefix) {
			return nil
		}
		fi, err := de.Info()
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		if fi.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(name); err != nil && !isNotFound(err) {
			return err
		}
		removed++
		b.prune(filepath.Dir(name))
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("clean temp files: %w", err)
	}
	return removed, nil
}
