package zookeeper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockcheck/lockcheck/internal/appcds"
	"github.com/lockcheck/lockcheck/internal/portlock"
)

// archive is the server's class-data archive (internal/appcds): a matrix starts a ZooKeeper JVM
// per server per cell, and loading ZooKeeper's classes was about a third of each start's CPU.
func archive() appcds.Archive { return appcds.Archive{Name: "zookeeper", Classpath: classpath()} }

// makeArchive makes the archive once per machine, by running a standalone server on a free port
// until it serves. Servers started on this machine's processes map it; containers do not see it.
func makeArchive(ctx context.Context, tick time.Duration) {
	archive().MakeOnce(ctx, func(ctx context.Context, flags []string) error {
		dir, err := os.MkdirTemp("", "lockcheck-zookeeper-appcds-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		port, err := portlock.Fresh()
		if err != nil {
			return err
		}
		defer port.Close() // held, not listened on: the server binds it beside the reservation
		cfg := filepath.Join(dir, "zoo.cfg")
		content := fmt.Sprintf("tickTime=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"+
			"4lw.commands.whitelist=srvr\n", tick.Milliseconds(), filepath.Join(dir, "data"), port.Port())
		if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
			return err
		}
		return appcds.RunUntilReady(ctx, append(append([]string{"java"}, flags...), javaArgs(cfg, tick)...), serving(port.Addr()))
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
