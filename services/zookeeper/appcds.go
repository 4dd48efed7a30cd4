package zookeeper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/appcds"
	"github.com/lockcheck/lockcheck/internal/portlock"
)

// archive is the server's class-data archive (internal/appcds): a matrix starts a ZooKeeper JVM
// per server per cell, and loading ZooKeeper's classes was about a third of each start's CPU.
func archive() appcds.Archive { return appcds.Archive{Name: "zookeeper", Classpath: classpath()} }

// archiveTries: a process tries to make an archive (by its path) once; after a failure its
// servers start without one rather than pay for the attempt at every start.
var archiveTries sync.Map // path -> *sync.Once

// makeArchive makes the archive once per machine, by running a standalone server on a free port
// until it serves. Servers started on this machine's processes map it; containers do not see it.
func makeArchive(ctx context.Context, tick time.Duration) {
	once, _ := archiveTries.LoadOrStore(archive().Path(), new(sync.Once))
	once.(*sync.Once).Do(func() {
		if archive().Flags() == nil {
			_ = trainArchive(ctx, tick) // without it the servers only start slower
		}
	})
}

func trainArchive(ctx context.Context, tick time.Duration) error {
	dir, err := os.MkdirTemp("", "lockcheck-zookeeper-appcds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, err := portlock.Fresh()
	if err != nil {
		return err
	}
	addr := port.Addr()
	cfg := filepath.Join(dir, "zoo.cfg")
	content := fmt.Sprintf("tickTime=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"+
		"4lw.commands.whitelist=srvr\n", tick.Milliseconds(), filepath.Join(dir, "data"), port.Port())
	defer port.Close() // held, not listened on: the server binds it beside the reservation
	if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
		return err
	}
	return archive().Make(ctx, func(ctx context.Context, flags []string) error {
		return appcds.RunUntilReady(ctx, append(append([]string{"java"}, flags...), javaArgs(cfg, tick)...), serving(addr))
	})
}

// serving is ready once the server at addr answers srvr with its mode.
func serving(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			if mode, err := fourLetterWord(ctx, addr, "srvr"); err == nil && mode != "" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
