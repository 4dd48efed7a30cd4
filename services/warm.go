package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/providers"
)

// Warm keeps the lock services of runs that are over for later runs of the same layout: a grid
// would otherwise start a ZooKeeper JVM, a three-member etcd cluster or a PostgreSQL server for
// every cell, work no verdict needs. Only a service no fault touched is kept: the run's faults acted on
// no server and no client link (Options.DirectClients and DirectPeers), so its servers are as
// they started, and the run's own keys are removed (Cleaner) before another run gets it. A run
// that ended in an error gives its service back to be stopped. Services run on this machine's
// processes (the local provider) only, in folders of the keeper's own (Dir/<kind>-<n>), since a
// run folder's server data goes when that run passes.
type Warm struct {
	dir  string
	idle time.Duration
	log  *slog.Logger

	mu      sync.Mutex
	free    map[string][]*kept // by layout (warmKey)
	started int
	reused  int
	closed  bool
	// stopping counts the services being stopped for idling, which Close waits for.
	stopping sync.WaitGroup
}

type kept struct {
	t     *Topology
	timer *time.Timer
}

// NewWarm keeps services in folders under dir, each at most idle between two runs.
func NewWarm(dir string, idle time.Duration, log *slog.Logger) *Warm {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Warm{dir: dir, idle: idle, log: log, free: map[string][]*kept{}}
}

// keepable says whether a run started with o may share its service with other runs.
func keepable(o Options) bool {
	return o.DirectClients && o.DirectPeers && (o.Provider == "" || o.Provider == providers.Default)
}

// Start returns a kept service of plan's layout, or starts one (in the keeper's folder when the
// run may share it, else as Start does); reused says which.
func (w *Warm) Start(ctx context.Context, plan *Plan, o Options) (t *Topology, reused bool, err error) {
	if w == nil || !keepable(o) || plan == nil {
		t, err = Start(ctx, plan, o)
		return t, false, err
	}
	key := warmKey(plan, o)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, false, errors.New("services: the warm keeper is closed")
	}
	if free := w.free[key]; len(free) > 0 {
		k := free[len(free)-1]
		w.free[key] = free[:len(free)-1]
		k.timer.Stop() // if it fired, expire finds k gone and leaves it
		w.reused++
		w.mu.Unlock()
		return k.t, true, nil
	}
	w.started++
	n := w.started
	w.mu.Unlock()
	o.Dir = filepath.Join(w.dir, fmt.Sprintf("%s-%d", plan.Kind, n))
	o.Links = nil // the service outlives this run's proxy set and logger
	o.Clients = nil
	o.Logger = w.log
	t, err = Start(ctx, plan, o)
	if err == nil {
		t.warmKey = key
	}
	return t, false, err
}

// Kept says whether t was started to be kept (by Start), so goes back with Give.
func (t *Topology) Kept() bool { return t.warmKey != "" }

// Give takes back a service a run is done with. A run that ended cleanly (ok) gets its keys
// removed and the service kept; anything else, or a service that cannot be cleaned, is stopped.
func (w *Warm) Give(ctx context.Context, t *Topology, key string, ok bool) error {
	c, canClean := t.Instance.(Cleaner)
	if !ok || !canClean {
		return w.stop(t)
	}
	if err := c.Cleanup(ctx, key); err != nil {
		return errors.Join(fmt.Errorf("keep the %s service: %w", t.Plan.Kind, err), w.stop(t))
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.stop(t)
	}
	k := &kept{t: t}
	k.timer = time.AfterFunc(w.idle, func() { w.expire(k) })
	w.free[t.warmKey] = append(w.free[t.warmKey], k)
	w.mu.Unlock()
	return nil
}

// expire stops a kept service no run asked for in time, unless a run or Close took it first.
func (w *Warm) expire(k *kept) {
	w.mu.Lock()
	free := w.free[k.t.warmKey]
	i := slices.Index(free, k)
	if i < 0 {
		w.mu.Unlock()
		return
	}
	w.free[k.t.warmKey] = slices.Delete(free, i, i+1)
	w.stopping.Add(1)
	w.mu.Unlock()
	defer w.stopping.Done()
	_ = w.stop(k.t)
}

// stop stops a service and removes its servers' data (their logs stay).
func (w *Warm) stop(t *Topology) error {
	err := t.Stop()
	if _, rerr := RemoveData(t.dir); rerr != nil {
		w.log.Warn("the kept servers' data stays", "dir", t.dir, "err", rerr)
	}
	return err
}

// Counts are how many services the keeper started and how many times a run got a kept one.
func (w *Warm) Counts() (started, reused int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started, w.reused
}

// Close stops every kept service; a service given back later is stopped then.
func (w *Warm) Close() error {
	w.mu.Lock()
	w.closed = true
	var all []*kept
	for _, free := range w.free {
		all = append(all, free...)
	}
	w.free = map[string][]*kept{}
	w.mu.Unlock()
	var errs []error
	for _, k := range all {
		k.timer.Stop()
		errs = append(errs, w.stop(k.t))
	}
	w.stopping.Wait()    // those that idled out just before
	_ = os.Remove(w.dir) // when no service was kept (its folder is empty)
	return errors.Join(errs...)
}

// warmKey names a layout on a provider: the services a keeper may hand from one run to another.
func warmKey(p *Plan, o Options) string {
	return strings.Join([]string{p.Layout(), o.Provider, o.ProviderConfig}, "|")
}
