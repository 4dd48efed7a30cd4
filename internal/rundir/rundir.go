// Package rundir makes the time-stamped folders results are written into, safely when several
// lockcheck processes (two CI jobs on one runner) write into the same results folder at once.
package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// StampLayout is how a folder is named after the time it was made (20261121T223234.742).
const StampLayout = "20060102T150405.000"

// New creates a fresh folder parent/<stamp of t> and returns its path. Two folders made in the
// same millisecond (by this process or another) do not share it: the second one is
// <stamp>-2, then -3, ... os.Mkdir fails on an existing folder, so exactly one caller gets each
// name. Names still sort by time.
func New(parent string, t time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	stamp := t.Format(StampLayout)
	for i := 1; ; i++ {
		name := stamp
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 1000 {
			return "", fmt.Errorf("create %s: %w", dir, err)
		}
	}
}

var linkSeq atomic.Int64

// Link points the symbolic link at link to target (a path relative to the link's folder), by
// renaming a new link over it: a reader never finds it missing. The temporary link's name is
// unique to this process and call, so concurrent writers do not remove each other's; the last
// rename wins.
func Link(link, target string) error {
	tmp := fmt.Sprintf("%s.tmp-%d-%d", link, os.Getpid(), linkSeq.Add(1))
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("point %s at %s: %w", link, target, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("point %s at %s: %w", link, target, err)
	}
	return nil
}
