package filebucket

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// errStop ends a walk early; it never leaves the package.
var errStop = errors.New("stop walk")

// List walks the tree in ascending byte order of full keys. It starts in the
// directory that holds Prefix, so a narrow prefix reads only its own subtree, and
// skips whole subtrees that sort at or before StartAfter. Within a directory, a
// subdirectory "b" sorts as "b/", so "a/b-c" < "a/b/c" < "a/ba" as in S3.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	if err := bucket.ValidatePrefix(opts.Prefix); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	dirKey, namePrefix := "", opts.Prefix
	if i := strings.LastIndexByte(opts.Prefix, '/'); i >= 0 {
		dirKey, namePrefix = opts.Prefix[:i], opts.Prefix[i+1:]
	}
	err := b.walk(ctx, dirKey, namePrefix, opts.StartAfter, opts.Delimited, fn)
	var fnErr callbackError
	if errors.As(err, &fnErr) {
		return fnErr.err
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	return nil
}

// callbackError carries an error from List's fn through the walk unchanged.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

type entry struct {
	name  string
	isDir bool
	sort  string // name, plus "/" for a directory
}

// walk lists the directory of dirKey ("" for the root): the entries whose names
// start with namePrefix, keys after startAfter, recursively unless delimited (then
// each non-empty subdirectory is one common prefix).
func (b *Bucket) walk(ctx context.Context, dirKey, namePrefix, startAfter string, delimited bool, fn func(bucket.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirName := b.root
	keyPrefix := ""
	if dirKey != "" {
		dirName = b.path(dirKey)
		keyPrefix = dirKey + "/"
	}
	des, err := os.ReadDir(dirName)
	if err != nil {
		if isNotFound(err) {
			return nil // nothing under this prefix (or removed meanwhile)
		}
		return err
	}
	entries := make([]entry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, namePrefix) || strings.HasPrefix(name, TempPrefix) {
			continue
		}
		e := entry{name: name, isDir: de.IsDir(), sort: name}
		if e.isDir {
			e.sort += "/"
		} else if !de.Type().IsRegular() {
			continue
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.sort, y.sort) })

	for i, e := range entries {
		if i%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		key := keyPrefix + e.sort
		if !e.isDir {
			if key <= startAfter || bucket.ValidateKey(key) != nil {
				continue
			}
			fi, err := os.Stat(b.path(key))
			if err != nil {
				if isNotFound(err) {
					continue // deleted since ReadDir
				}
				return err
			}
			if err := fn(info(key, fi)); err != nil {
				return callbackError{err}
			}
			continue
		}
		// Every key below starts with key ("dir/"): skip the subtree when all of
		// it sorts before startAfter.
		if key < startAfter && !strings.HasPrefix(startAfter, key) {
			continue
		}
		if bucket.ValidatePrefix(key) != nil {
			continue
		}
		if !delimited {
			if err := b.walk(ctx, key[:len(key)-1], "", startAfter, false, fn); err != nil {
				return err
			}
			continue
		}
		if key <= startAfter {
			continue // as S3: a prefix is listed only if it sorts after startAfter
		}
		found, err := b.hasKey(ctx, key[:len(key)-1], "")
		if err != nil {
			return err
		}
		if found {
			if err := fn(bucket.ObjectInfo{Key: key, IsPrefix: true}); err != nil {
				return callbackError{err}
			}
		}
	}
	return nil
}

// hasKey reports whether the subtree of dirKey holds a listable key after
// startAfter ("": any), so that empty directories (or ones holding only temp files) never
// show up as common prefixes.
func (b *Bucket) hasKey(ctx context.Context, dirKey, startAfter string) (bool, error) {
	err := b.walk(ctx, dirKey, "", startAfter, false, func(bucket.ObjectInfo) error { return errStop })
	var fnErr callbackError
	if errors.As(err, &fnErr) && fnErr.err == errStop {
		return true, nil
	}
	return false, err
}
