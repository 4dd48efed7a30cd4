package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
)

// clients are a run's worker processes, one per client, and the goroutines that pump what each
// writes into the history.
type clients struct {
	mu      sync.Mutex
	workers []*workloads.Worker
	logs    []*os.File

	finishing sync.Map // client name -> true once the run asked it to finish (or killed it)
	pumps     sync.WaitGroup
	broken    chan string // the first client whose lock client broke for good
}

func newClients() *clients { return &clients{broken: make(chan string, 1)} }

// spawn starts a client's worker, its log in the run folder's logs/.
func (c *clients) spawn(o Options, dir string, cfg workloads.Config) (*workloads.Worker, error) {
	log, err := os.Create(filepath.Join(dir, "logs", cfg.Client+".log"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, log)
	w, err := workloads.Spawn(o.Worker, o.WorkerEnv, cfg, log)
	if err != nil {
		return nil, err
	}
	c.workers = append(c.workers, w)
	return w, nil
}

// all is every worker started so far.
func (c *clients) all() []*workloads.Worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*workloads.Worker(nil), c.workers...)
}

// pump records what w writes and shows it to the nemesis (faults aimed at the holder or a waiter
// follow the history); a worker that exits unasked is recorded as a crash.
func (c *clients) pump(w *workloads.Worker, record func(history.Event), nem *nemesis.Nemesis, crashed func(history.Event)) {
	c.pumps.Add(1)
	go func() {
		defer c.pumps.Done()
		for e := range w.Events {
			record(e)
			nem.Observe(e)
			switch {
			case e.F == workloads.Stopped:
				go atPoint(nem, w, e)
			case e.F == workloads.Broken && e.Type == history.Note:
				select {
				case c.broken <- fmt.Sprintf("%s: %s", w.Name, e.Error):
				default:
				}
			}
		}
		if _, asked := c.finishing.Load(w.Name); !asked {
			crash := history.Event{Target: w.Name, Error: "worker exited before the end of the run"}
			crashed(crash)
			crash.Process, crash.F = history.Controller, history.Crash
			nem.Observe(crash)
		}
	}()
}

// waitReady waits until every client's lock client is built.
func (c *clients) waitReady(ctx context.Context) error {
	for _, w := range c.all() {
		if err := w.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// goAll starts every client's loop, their stagger counted from one instant.
func (c *clients) goAll() {
	at := history.Now()
	for _, w := range c.all() {
		_ = w.Go(at)
	}
}

// arm tells every client to stop at each pass of point; disarm, no more.
func (c *clients) arm(point string) {
	for _, w := range c.all() {
		_ = w.Arm(point)
	}
}

func (c *clients) disarm(point string) {
	for _, w := range c.all() {
		_ = w.Disarm(point)
	}
}

// finish asks every client to finish its cycle and release, and waits up to grace for the last
// of their events; if they take longer, it kills them and calls killed before it waits for what
// they wrote last.
func (c *clients) finish(grace time.Duration, killed func()) {
	for _, w := range c.all() {
		c.finishing.Store(w.Name, true)
		_ = w.Finish()
	}
	done := make(chan struct{})
	go func() { c.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		c.killAll()
		killed()
		c.kill()
	}
}

// kill stops every worker still running at once, waits for their last events and closes their
// logs. Safe to call more than once.
func (c *clients) kill() {
	c.killAll()
	c.pumps.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.logs {
		_ = l.Close()
	}
	c.logs = nil
}

func (c *clients) killAll() {
	for _, w := range c.all() {
		c.finishing.Store(w.Name, true)
		_ = w.Process().Kill()
	}
}
