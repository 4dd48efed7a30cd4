// Package runner carries out one scenario end to end: it starts the cluster, one worker process
// per client and the nemesis; streams every event into the run's history; at the end heals every
// fault, stops the clients, records the resource's final state and own log, and judges the
// history. It is the only package that knows all the others.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

// Options are how to run, as opposed to what (the scenario).
type Options struct {
	ResultsDir string   // where run folders go; default "results"
	Worker     []string // command line that starts a worker; default: this executable + "worker"
	WorkerEnv  []string // environment for workers; default: ours
	Logger     *slog.Logger
	// OnEvent, if set, sees every event as it is recorded (a progress display); it is called
	// from several goroutines at once.
	OnEvent func(history.Event)
	// Provider, if set, overrides where the scenario's servers run (its provider: field);
	// ProviderConfig is the provider's own settings (the external provider's endpoints file).
	Provider       string
	ProviderConfig string
	// Duration, if set, runs the scenario this long instead of its own duration (a soak).
	Duration time.Duration
	// StopAfterOverlap, if set, ends the run (as its duration would: faults healed, clients
	// released, history judged) this long after the history first shows two clients holding
	// the lock at once: a search for the first violation need not run on. Not for read/write
	// designs, whose readers share the lock.
	StopAfterOverlap time.Duration
}

// ErrInterrupted marks a run cut short by its context (Ctrl-C). Its history is still judged.
var ErrInterrupted = errors.New("run interrupted")

// LockKey is the key every client contends for in the run whose folder is dir: unique to the run,
// so a run on a cluster that outlives it (an external provider's) writes only under its own names,
// which it removes at the end.
func LockKey(dir string) string { return "lockcheck:" + filepath.Base(dir) + ":lock" }

// readyTimeout bounds the start of the clients' lock clients (external programs included).
const readyTimeout = 90 * time.Second

// Run carries out sc and returns its judged result. A harness failure (servers that do not start)
// is an error; so is an interruption, which still returns the result judged so far.
func Run(ctx context.Context, sc *scenarios.Scenario, o Options) (*Result, error) {
	if err := sc.CheckProgram(); err != nil { // an external lock's program, before anything starts
		return nil, err
	}
	o = o.withDefaults()
	sc = withDuration(sc, o.Duration)
	dir, err := newRunDir(o.ResultsDir, sc)
	if err != nil {
		return nil, err
	}
	runErr := execute(ctx, sc, dir, o)
	if runErr != nil && !errors.Is(runErr, ErrInterrupted) {
		return &Result{Dir: dir}, runErr
	}
	res, err := Judge(dir)
	if err != nil {
		return &Result{Dir: dir}, err
	}
	return res, runErr
}

func (o Options) withDefaults() Options {
	if o.ResultsDir == "" {
		o.ResultsDir = "results"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(o.Worker) == 0 {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		o.Worker = []string{exe, "worker"}
	}
	if o.WorkerEnv == nil {
		o.WorkerEnv = os.Environ()
	}
	return o
}

// execute runs the scenario and writes the history; it does not judge.
func execute(ctx context.Context, sc *scenarios.Scenario, dir string, o Options) (err error) {
	hw, err := history.Create(filepath.Join(dir, HistoryFile))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := hw.Close(); err == nil {
			err = cerr
		}
	}()
	record := hw.Append
	if o.OnEvent != nil {
		record = func(e history.Event) { hw.Append(e); o.OnEvent(e) }
	}
	note := func(f string, e history.Event) {
		e.Time, e.Process, e.Type, e.F = history.Now(), history.Controller, history.Note, f
		record(e)
	}

	clients := sc.ClientNames()
	absDir, err := filepath.Abs(dir) // servers run in their own folders: relative paths would break
	if err != nil {
		return err
	}
	provider := sc.Provider
	if o.Provider != "" {
		provider = o.Provider
	}
	svc, err := startServers(ctx, sc, absDir, provider, o.ProviderConfig, clients, o.Logger)
	if err != nil {
		note(history.End, history.Event{Error: err.Error()})
		return fmt.Errorf("start servers: %w", err)
	}
	defer svc.stop()

	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	sched := sc.Schedule()
	workers := make([]*workloads.Worker, 0, len(clients))
	var finishing sync.Map // client name -> true once we asked it to finish
	var pumps sync.WaitGroup
	broken := make(chan string, 1) // the first client whose lock client broke for good
	nem := nemesis.New(svc.service.Targets(), record)
	nem.SetNetwork(svc.service)
	nem.Plan(sched) // before any client can reach a program point
	defer nem.Heal()
	nem.SetArming(func(point string) {
		for _, w := range workers {
			_ = w.Arm(point)
		}
	}, func(point string) {
		for _, w := range workers {
			_ = w.Disarm(point)
		}
	})
	abandon := func() { // stop every worker at once and wait for their last events
		for _, w := range workers {
			finishing.Store(w.Name, true)
			_ = w.Process().Kill()
		}
		pumps.Wait()
	}
	for i, name := range clients {
		logFile, err := os.Create(filepath.Join(logDir, name+".log"))
		if err != nil {
			abandon()
			return err
		}
		defer logFile.Close()
		w, err := workloads.Spawn(o.Worker, o.WorkerEnv, workerConfig(sc, sched, svc, name, i), logFile)
		if err != nil {
			abandon()
			note(history.End, history.Event{Error: err.Error()})
			return err
		}
		defer w.Process().Kill()
		workers = append(workers, w)
		nem.AddTarget(name, clientTarget{w.Process(), w})
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			for e := range w.Events {
				record(e)
				nem.Observe(e) // faults aimed at the holder or a waiter follow the history
				switch {
				case e.F == workloads.Stopped:
					go atPoint(nem, w, e)
				case e.F == workloads.Broken && e.Type == history.Note:
					select {
					case broken <- fmt.Sprintf("%s: %s", w.Name, e.Error):
					default:
					}
				}
			}
			if _, asked := finishing.Load(w.Name); !asked {
				crash := history.Event{Target: w.Name, Error: "worker exited before the end of the run"}
				note(history.Crash, crash)
				crash.Process, crash.F = history.Controller, history.Crash
				nem.Observe(crash)
			}
		}()
	}
	// Every client's lock is built before the run's clock starts: an external design's program
	// (a JVM, say) may take seconds to start, and the clients start together.
	readyCtx, cancelReady := context.WithTimeout(ctx, readyTimeout)
	defer cancelReady()
	for _, w := range workers {
		if err := w.WaitReady(readyCtx); err != nil {
			abandon()
			note(history.End, history.Event{Error: err.Error()})
			return fmt.Errorf("start clients: %w", err)
		}
	}
	note(history.Start, history.Event{Duration: int64(sc.Duration.D()), Server: svc.service.Server()})
	if err := nem.Start(sched); err != nil {
		abandon()
		return err
	}
	for _, w := range workers {
		_ = w.Go()
	}

	overlap := make(<-chan time.Time) // never, unless asked for
	if o.StopAfterOverlap > 0 && !sc.Design().ReadWrite {
		watch, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		overlap = afterOverlap(watch, nem.State(), o.StopAfterOverlap)
	}
	interrupted := false
	var brokenErr error
	select {
	case <-overlap:
	case <-time.After(sc.Duration.D()):
	case <-ctx.Done():
		interrupted = true
	case why := <-broken:
		brokenErr = fmt.Errorf("a client's lock broke: %s", why)
	}

	// The final phase: heal everything, then let the clients finish their cycle and release.
	nem.Heal()
	for _, w := range workers {
		finishing.Store(w.Name, true)
		_ = w.Finish()
	}
	grace := sc.Workload.AcquireTimeout.D() + sc.Workload.Hold.D() + 4*sc.Workload.Timeout.D() + time.Second
	if interrupted {
		grace = time.Second
	}
	if !waitGroup(&pumps, grace) {
		for _, w := range workers {
			_ = w.Process().Kill()
		}
		note(history.Kill, history.Event{Error: "clients did not finish in time and were killed"})
		pumps.Wait()
	}

	if brokenErr == nil { // a lock that broke while finishing makes the run as suspect
		select {
		case why := <-broken:
			brokenErr = fmt.Errorf("a client's lock broke: %s", why)
		default:
		}
	}

	recordResource(ctx, svc.resourceDirect(), record, o.Logger)
	end := history.Event{}
	switch {
	case brokenErr != nil:
		end.Error = brokenErr.Error()
	case interrupted:
		end.Error = ErrInterrupted.Error()
	}
	note(history.End, end)
	if brokenErr != nil {
		return brokenErr
	}
	if interrupted {
		return ErrInterrupted
	}
	return nil
}

// afterOverlap fires once state shows two clients' holds overlapping. Two holders at once, as the
// events arrive, are a suspicion (one client's release may still be in its pipe): after grace,
// the events of that moment have arrived and their times decide.
func afterOverlap(ctx context.Context, state *nemesis.LockState, grace time.Duration) <-chan time.Time {
	fire := make(chan time.Time, 1)
	go func() {
		for {
			changed := state.Changed()
			if len(state.Candidates(nemesis.Holder)) >= 2 {
				select {
				case <-time.After(grace):
				case <-ctx.Done():
					return
				}
				if state.Overlapping() {
					fire <- time.Now()
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return fire
}

// clientTarget is a client as the nemesis sees it: a process to pause or kill, and a clock.
type clientTarget struct {
	*proc.Process
	worker *workloads.Worker
}

func (c clientTarget) Pause() error  { return c.Process.Stop() }
func (c clientTarget) Resume() error { return c.Process.Cont() }

func (c clientTarget) SetClock(offset time.Duration, rate float64) error {
	return c.worker.SetClock(offset, rate)
}

// atPoint hands a client that stopped itself at a program point to the nemesis, once the process
// is really stopped (it wrote the note just before SIGSTOP).
func atPoint(nem *nemesis.Nemesis, w *workloads.Worker, e history.Event) {
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Process().WaitStopped(wctx); err != nil {
		return // it died instead; the pump records that
	}
	nem.Stopped(w.Name, e.Point, e.Pass)
}

// recordResource appends the resource's final values and its own access log to the history.
func recordResource(ctx context.Context, addr string, record func(history.Event), log *slog.Logger) {
	store := resource.Dial(addr, 2*time.Second)
	defer store.Close()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := history.Now()
	if final, err := store.Final(rctx); err != nil {
		log.Error("read resource final values", "err", err)
	} else {
		record(history.Event{Time: now, Process: history.Resource, Type: history.Note, F: history.Final, Registers: final})
	}
	// Page by page: a soak's log has hundreds of thousands of entries.
	if err := store.EachLogEntry(rctx, now, record); err != nil {
		log.Error("read resource log", "err", err)
	}
}

func workerConfig(sc *scenarios.Scenario, sched nemesis.Schedule, svc *servers, client string, i int) workloads.Config {
	cfg := workloads.Config{
		Client:    client,
		Lock:      sc.Lock,
		Endpoints: svc.service.Endpoints(client),
		Role:      sc.Role(client),
		Resource:  svc.resourceAddr(client),
		Key:       svc.key,
		TTL:       sc.TTL.D(),
		Seed:      sc.Seed*1000 + int64(i),
		External:  sc.Design().Program,
		AwaitGo:   true,
		Clock:     workloads.ClockSetting{Offset: sc.Clocks[client].Offset.D(), Rate: sc.Clocks[client].Rate},
		Workload: workloads.Workload{
			Hold:           sc.Workload.Hold.D(),
			Think:          sc.Workload.Think.D(),
			StartDelay:     sc.Workload.Start.D() + time.Duration(i)*sc.Workload.Stagger.D(),
			AcquireTimeout: sc.Workload.AcquireTimeout.D(),
			BackoffMin:     sc.Workload.BackoffMin.D(),
			BackoffMax:     sc.Workload.BackoffMax.D(),
			Timeout:        sc.Workload.Timeout.D(),
			Reentrant:      sc.Workload.Reentrant,
		},
	}
	for _, f := range sc.Nemesis {
		if f.Random == nil && f.Point != "" && f.Target == client {
			cfg.StopAt = append(cfg.StopAt, workloads.StopAt{Point: f.Point, Occurrence: f.Occurrence})
		}
	}
	for _, point := range sched.EveryPass() { // the nemesis picks the pass by the lock's state
		cfg.StopAt = append(cfg.StopAt, workloads.StopAt{Point: point, Every: true})
	}
	return cfg
}

func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
