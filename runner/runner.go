// Package runner carries out one scenario end to end: it starts the cluster, one worker process
// per client and the nemesis; streams every event into the run's history; at the end heals every
// fault, stops the clients, records the resource's final state and own log, and judges the
// history. It is the only package that knows all the others.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
	"github.com/lockcheck/lockcheck/workloads"
)

// Options are how to run, as opposed to what (the scenario).
type Options struct {
	ResultsDir string   // where run folders go; default "results"
	Worker     []string // command line that starts a worker; default: workloads.Program of this executable
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
	// StopOn, with StopAfterOverlap, ends the run only at a window of this class or a more
	// serious one (checker.WindowClass): a hunt for broken promises runs on past the windows of
	// holders that outlived theirs. "": at any window.
	StopOn checker.WindowClass
	// KeepData keeps the lock servers' data folders (services.DataDir) in the run folder of a
	// run that passed; a run that failed or broke keeps them anyway, for whoever looks into it.
	KeepData bool
	// Warm, if set, keeps the lock service of a run no fault touched for the next run of the same
	// layout (services.Warm); nil starts and stops a service for every run.
	Warm *services.Warm
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
	if err := sc.Prepare(); err != nil { // lock programs found or built, before anything starts
		return nil, err
	}
	o = o.withDefaults()
	sc, err := withDuration(sc, o.Duration)
	if err != nil {
		return nil, err
	}
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
	if runErr == nil && res.Matches && !o.KeepData {
		if _, err := services.RemoveData(dir); err != nil {
			o.Logger.Warn("the servers' data stays in the run folder", "err", err)
		}
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
		o.Worker = workloads.Program(exe)
	}
	if o.WorkerEnv == nil {
		o.WorkerEnv = os.Environ()
	}
	return o
}

// execute carries out the scenario and writes its history; it does not judge. It goes through
// the run's phases in order; whichever way the run ends (its length over, interrupted, a client
// broken, a phase failed), it leaves through the one way out, end.
func execute(ctx context.Context, sc *scenarios.Scenario, dir string, o Options) (err error) {
	r, err := open(sc, dir, o)
	if err != nil {
		return err // no history to write to
	}
	defer func() { err = r.end(err) }()
	for _, p := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"prepare", r.prepare},
		{"start servers", r.startServers},
		{"start clients", r.startClients},
		{"run", r.runClients},
		{"finish", r.finish},
		{"record", r.recordResource},
	} {
		if err := atPhase(ctx, p.name); err != nil {
			return err
		}
		if err := p.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return r.stopped
}

// atPhase is called as each phase begins; tests stop runs there.
var atPhase = func(context.Context, string) error { return nil }

// run is one scenario being carried out: what its phases start, kept for the phases after and
// for the way out.
type run struct {
	sc  *scenarios.Scenario
	dir string // the run folder, absolute: servers run in folders of their own
	o   Options

	hw     *history.Writer
	record func(history.Event)
	// seen keeps the history in memory too, when the run stops at a class of window
	// (Options.StopOn), which is judged on the events so far.
	seenMu  sync.Mutex
	seen    []history.Event
	svc     *servers
	nem     *nemesis.Nemesis
	clients *clients
	// stopped is why the clients stopped before the run's length was over (ErrInterrupted, a
	// lock that broke); the run still finishes and records, and returns it.
	stopped     error
	interrupted bool
}

// open creates the run's history.
func open(sc *scenarios.Scenario, dir string, o Options) (*run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &run{sc: sc, dir: abs, o: o, clients: newClients()}
	if r.hw, err = history.Create(filepath.Join(dir, HistoryFile)); err != nil {
		return nil, err
	}
	r.record = r.hw.Append
	if o.OnEvent != nil {
		r.record = func(e history.Event) { r.hw.Append(e); o.OnEvent(e) }
	}
	if o.StopOn != "" && o.StopAfterOverlap > 0 {
		write := r.record
		r.record = func(e history.Event) {
			write(e)
			if e.Process != history.Resource {
				r.seenMu.Lock()
				r.seen = append(r.seen, e.Clone())
				r.seenMu.Unlock()
			}
		}
	}
	return r, nil
}

// note records a note of the controller's.
func (r *run) note(f string, e history.Event) {
	e.Time, e.Process, e.Type, e.F = history.Now(), history.Controller, history.Note, f
	r.record(e)
}

// prepare makes the folder the clients' logs go to.
func (r *run) prepare(context.Context) error {
	return os.MkdirAll(filepath.Join(r.dir, "logs"), 0o755)
}

// startServers starts the lock service and the resource, and makes the nemesis: its faults at
// program points are planned before any client can reach one.
func (r *run) startServers(ctx context.Context) error {
	provider := r.sc.Provider
	if r.o.Provider != "" {
		provider = r.o.Provider
	}
	var err error
	r.svc, err = startServers(ctx, r.sc, r.dir, provider, r.o.ProviderConfig, r.sc.ClientNames(), r.o.Warm, r.o.Logger)
	if err != nil {
		return err
	}
	r.nem = nemesis.New(nemesis.Config{Schedule: r.sc.Schedule(), Targets: r.svc.service.Targets(), Network: r.svc.service,
		Record: r.record, Arm: r.clients.arm, Disarm: r.clients.disarm})
	return nil
}

// startClients starts one worker per client and waits until every client's lock is built, before
// the run's clock starts: an external design's program (a JVM, say) may take seconds to start,
// and the clients start together.
func (r *run) startClients(ctx context.Context) error {
	for i, name := range r.sc.ClientNames() {
		w, err := r.clients.spawn(r.o, r.dir, workerConfig(r.sc, r.svc, name, i))
		if err != nil {
			return err
		}
		r.nem.AddTarget(name, clientTarget{w.Process(), w})
		r.clients.pump(w, r.record, r.nem, func(crash history.Event) { r.note(history.Crash, crash) })
	}
	readyCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return r.clients.waitReady(readyCtx)
}

// runClients starts the run's clock, the nemesis and the clients, and lets them run for the
// scenario's length, or until the history shows an overlap (StopAfterOverlap), the run is
// interrupted or a client's lock breaks.
func (r *run) runClients(ctx context.Context) error {
	r.note(history.Start, history.Event{Duration: int64(r.sc.Duration.D()), Server: r.svc.service.Server()})
	for _, c := range r.sc.ClientNames() { // which design each client runs (client_locks), and what it promises
		env := locks.Env{TTL: r.sc.TTL.D(), Params: r.svc.service.Endpoints(c).Params}
		rule := r.sc.DesignOf(c).PromiseRule(env)
		note := history.Event{Target: c, Design: r.sc.LockOf(c), Rule: &rule}
		if clk := r.sc.Clocks[c]; clk.Offset != 0 || (clk.Rate != 0 && clk.Rate != 1) {
			// A clock the scenario set from the start: what a design that reckons by its
			// clients' clocks promises depends on it.
			note.Params, _ = json.Marshal(map[string]any{"offset": clk.Offset.D(), "rate": clk.Rate})
		}
		r.note(history.ClientDesign, note)
	}
	if err := r.nem.Start(); err != nil {
		return err
	}
	r.clients.goAll()
	leaseCtx, stopLease := context.WithCancel(ctx)
	leaseDone := make(chan struct{})
	go func() { defer close(leaseDone); r.watchLease(leaseCtx) }()
	defer func() { stopLease(); <-leaseDone }()
	overlap := make(<-chan time.Time) // never, unless asked for
	if r.o.StopAfterOverlap > 0 && !r.sc.Design().ReadWrite {
		watch, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		overlap = afterOverlap(watch, r.nem.State(), r.o.StopAfterOverlap, r.serious)
	}
	select {
	case <-overlap:
	case <-time.After(r.sc.Duration.D()):
	case <-ctx.Done():
		r.interrupted, r.stopped = true, ErrInterrupted
	case why := <-r.clients.broken:
		r.stopped = fmt.Errorf("a client's lock broke: %s", why)
	}
	return nil
}

// finish heals every fault, then lets the clients finish their cycle and release; those that do
// not in time are killed. A lock that broke while finishing makes the run as suspect.
func (r *run) finish(context.Context) error {
	r.nem.Heal()
	wl := r.sc.Workload
	grace := wl.AcquireTimeout.D() + wl.Hold.D() + max(4*wl.Timeout.D(), wl.AttemptBound()) + time.Second
	if r.interrupted {
		grace = time.Second
	}
	r.clients.finish(grace, func() {
		r.note(history.Kill, history.Event{Error: "clients did not finish in time and were killed"})
	})
	if r.stopped == nil {
		select {
		case why := <-r.clients.broken:
			r.stopped = fmt.Errorf("a client's lock broke: %s", why)
		default:
		}
	}
	return nil
}

// recordResource appends the resource's final values and its own access log to the history.
func (r *run) recordResource(ctx context.Context) error {
	store := resource.Dial(r.svc.resourceDirect(), 2*time.Second)
	defer store.Close()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := history.Now()
	if final, err := store.Final(rctx); err != nil {
		r.o.Logger.Error("read resource final values", "err", err)
	} else {
		r.record(history.Event{Time: now, Process: history.Resource, Type: history.Note, F: history.Final, Registers: final})
	}
	// Page by page: a soak's log has hundreds of thousands of entries.
	if err := store.EachLogEntry(rctx, now, r.record); err != nil {
		r.o.Logger.Error("read resource log", "err", err)
	}
	return nil
}

// end is the one way out of a run, however it ended: every fault healed, every client still
// running killed (its last events recorded), the end note saying why the run ended (err, if it
// did not simply run its length), the servers stopped, the history closed.
func (r *run) end(err error) error {
	if r.nem != nil {
		r.nem.Heal()
	}
	r.clients.kill()
	end := history.Event{}
	if err != nil {
		end.Error = err.Error()
	}
	r.note(history.End, end)
	if r.svc != nil {
		r.svc.stop(err == nil)
	}
	if cerr := r.hw.Close(); err == nil {
		err = cerr
	}
	return err
}

// afterOverlap fires once state shows two clients' holds overlapping. Two holders at once, as the
// events arrive, are a suspicion (one client's release may still be in its pipe): after grace,
// the events of that moment have arrived and their times decide.
func afterOverlap(ctx context.Context, state *nemesis.LockState, grace time.Duration, serious func() bool) <-chan time.Time {
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
				if state.Overlapping() && serious() {
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

// serious reports whether the history so far shows a window of double ownership of the class the
// run stops on (Options.StopOn), or of any class when it names none.
func (r *run) serious() bool {
	if r.o.StopOn == "" {
		return true
	}
	r.seenMu.Lock()
	events := slices.Clone(r.seen)
	r.seenMu.Unlock()
	worst := checker.DoubleOwnership(events).Worst()
	return worst == r.o.StopOn || worst.Worse(r.o.StopOn)
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

// Step tells the client an aimed usage step (nemesis.Stepper).
func (c clientTarget) Step(step, point string, occurrence int) error {
	return c.worker.Step(step, point, occurrence)
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

// workerConfig is what client i's worker is sent.
func workerConfig(sc *scenarios.Scenario, svc *servers, client string, i int) workloads.Config {
	cfg := workloads.Config{
		Client:     client,
		Lock:       sc.LockOf(client),
		Endpoints:  svc.service.Endpoints(client),
		Role:       sc.Role(client),
		Resource:   svc.resourceAddr(client),
		Key:        svc.key,
		TTL:        sc.TTL.D(),
		Seed:       sc.Seed*1000 + int64(i),
		External:   sc.DesignOf(client).Program,
		AwaitGo:    true,
		Clock:      workloads.ClockSetting{Offset: sc.Clocks[client].Offset.D(), Rate: sc.Clocks[client].Rate},
		Workload:   sc.Workload,
		StartDelay: sc.Workload.Start.D() + time.Duration(i)*sc.Workload.Stagger.D(),
	}
	for _, f := range sc.Nemesis {
		if f.Random == nil && f.Point != "" && f.Passer() == client && !nemesis.IsStep(f.Kind) {
			cfg.StopAt = append(cfg.StopAt, workloads.StopAt{Point: f.Point, Occurrence: f.Occurrence})
		}
	}
	for _, point := range sc.Schedule().EveryPass() { // the nemesis picks the pass by the lock's state
		cfg.StopAt = append(cfg.StopAt, workloads.StopAt{Point: point, Every: true})
	}
	return cfg
}
