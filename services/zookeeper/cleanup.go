package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockcheck/lockcheck/locks"
)

// Cleanup deletes the lock's znode and everything under it (what the ZooKeeper designs create
// for key; key is unique to the run).
func (z *Ensemble) Cleanup(ctx context.Context, key string) error {
	var addrs []string
	for _, name := range z.names {
		addrs = append(addrs, z.servers[name].Addr(ClientPort))
	}
	conn, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return fmt.Errorf("zookeeper: clean up: %w", err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- deleteTree(conn, locks.ZKLockPath(key)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("zookeeper: clean up %s: %w", locks.ZKLockPath(key), ctx.Err())
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// deleteTree deletes path and its children, children first; a node already gone is fine.
func deleteTree(conn *zk.Conn, path string) error {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zookeeper: list %s: %w", path, err)
	}
	for _, c := range children {
		if err := deleteTree(conn, path+"/"+c); err != nil {
			return err
		}
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zookeeper: delete %s: %w", path, err)
	}
	return nil
}
