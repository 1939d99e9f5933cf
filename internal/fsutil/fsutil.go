// Package fsutil holds the file-system steps that make local writes durable and
// atomic, shared by the local-directory bucket, the SessionTree files, the mirror's
// outbox and the command-line tools.
package fsutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory dir so that entries created, renamed or removed in
// it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// WriteFileAtomic replaces path with what write produces: it writes a temp file in
// path's directory, fsyncs it, renames it over path and fsyncs the directory, so a
// reader (or a crash) sees the old file or the new one, never a mix. With noSync the
// fsyncs are skipped (tests and benchmarks only). On error the temp file is removed
// and path is untouched.
func WriteFileAtomic(path string, noSync bool, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(name)
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if !noSync {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", name, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("rename %s: %w", name, err)
	}
	if noSync {
		return nil
	}
	return SyncDir(dir)
}
