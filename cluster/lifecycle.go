package cluster

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lockcheck/lockcheck/internal/proc"
)

// lifecycle is what every server (redis-server, ZooKeeper) keeps about its process: the current
// one (a new one after each Restart), whether it was stopped for good, and a lock that keeps a
// Restart and a final stop from crossing.
type lifecycle struct {
	kind string // "redis", "zookeeper": for error messages

	restartMu sync.Mutex // serialises Restart and stop

	mu     sync.Mutex // guards p, closed (and the embedding server's own per-process fields)
	p      *proc.Process
	closed bool
}

// Process is the server's current process, for the nemesis to pause, resume or kill.
func (l *lifecycle) Process() *proc.Process {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p
}

// killAndWait kills the current process, if any, and waits until it is gone.
func (l *lifecycle) killAndWait(name string) error {
	p := l.Process()
	if p == nil {
		return nil
	}
	if err := p.Kill(); err != nil {
		return fmt.Errorf("%s %s: %w", l.kind, name, err)
	}
	_ = p.Wait() // "signal: killed" is what we asked for
	return nil
}

// stop kills the server for good: no Restart afterwards.
func (l *lifecycle) stop(name string) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	err := l.killAndWait(name)
	l.restartMu.Lock() // wait for a Restart in progress, which now fails
	defer l.restartMu.Unlock()
	return errors.Join(err, l.killAndWait(name))
}

// stopAll runs every stop at once (each a server's stop), waits for all of them and returns their
// errors joined.
func stopAll(stops []func() error) error {
	errs := make([]error, len(stops))
	var wg sync.WaitGroup
	for i, stop := range stops {
		wg.Go(func() { errs[i] = stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
