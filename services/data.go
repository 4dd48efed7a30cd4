package services

import (
	"io/fs"
	"os"
	"path/filepath"
)

// DataDir is the folder, inside each server's folder (Options.Dir/servers/<name>/), where a kind
// keeps its server's data: a database's files, ZooKeeper's snapshots, an etcd member's log. The
// server's own log stays beside it. (Redis's append-only file, a few kilobytes, stays where
// Redis puts it.)
const DataDir = "data"

// RemoveData deletes the data folder of every server of the run folder runDir, keeping the rest
// (logs, configuration), and returns how many bytes it freed. A run's verdict needs only its
// history; a PostgreSQL data folder alone is about 28 MB, so a series of runs that passed would
// otherwise keep hundreds of megabytes nobody reads. Call it once the servers are stopped.
func RemoveData(runDir string) (int64, error) {
	dirs, err := filepath.Glob(filepath.Join(runDir, "servers", "*", DataDir))
	if err != nil {
		return 0, err
	}
	var freed int64
	for _, d := range dirs {
		freed += size(d)
		if err := os.RemoveAll(d); err != nil {
			return freed, err
		}
	}
	return freed, nil
}

// size adds up the sizes of the files under dir.
func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
