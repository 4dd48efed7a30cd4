package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockcheck/lockcheck/clock"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/resource"
)

// Main is the worker process: it reads its Config from in, builds its lock client, says it is
// ready (or, if the client cannot be built, why not: a Broken note), waits for "go" if asked to,
// runs the loop until told to stop (or in closes, which means the controller is gone), and
// writes events to out. A lock client that breaks for good ends it with an error.
func Main(in io.Reader, out io.Writer, logger *slog.Logger) error {
	lines := bufio.NewScanner(in)
	if !lines.Scan() {
		return fmt.Errorf("worker: no config on stdin: %v", lines.Err())
	}
	var cfg Config
	if err := json.Unmarshal(lines.Bytes(), &cfg); err != nil {
		return fmt.Errorf("worker: bad config: %w", err)
	}
	w, err := newWorker(cfg, out, logger)
	if err != nil {
		(&worker{cfg: cfg, out: out, log: logger}).emit(history.Event{Type: history.Note, F: Broken, Error: err.Error()})
		return err
	}
	defer w.close()
	w.emit(history.Event{Type: history.Note, F: Ready})
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := make(chan struct{})
	var goAt int64 // when the controller said go, read before start closes
	go func() {    // later lines are commands; EOF means the controller is gone: stop too
		defer cancel()
		started := false
		for lines.Scan() {
			var c Command
			if err := json.Unmarshal(lines.Bytes(), &c); err != nil {
				logger.Error("bad command", "line", lines.Text(), "err", err)
				continue
			}
			switch c.Cmd {
			case "go":
				if !started {
					started, goAt = true, c.At
					close(start)
				}
			case "stop":
				return
			case "clock":
				w.clock.Set(c.Clock.Offset, c.Clock.Rate)
			case "arm", "disarm":
				w.arm(c.Point, c.Cmd == "arm")
			case "step":
				w.step(c)
			}
		}
	}()
	delay := cfg.StartDelay
	if cfg.AwaitGo {
		select {
		case <-start:
		case <-stop.Done():
			return nil
		}
		if goAt > 0 {
			delay -= time.Duration(history.Now() - goAt) // the time the line took to be read
		}
	}
	return w.loop(stop, delay)
}

type worker struct {
	cfg    Config
	lock   locks.Lock
	store  *resource.Store
	clock  *clock.Skewed
	design locks.Design
	rng    *rand.Rand
	log    *slog.Logger

	outMu sync.Mutex
	out   io.Writer

	env     locks.Env      // what the lock was built with
	promise time.Duration  // how long each yes of the lock lasts (locks.Design.PromiseLength)
	held    string         // the side of a read/write lock the current hold has (its role, or another the lock said)
	op      atomic.Int64   // last operation id: renewals take theirs from the lock's own goroutines
	cs      int64          // last critical section number
	passes  map[string]int // how often each program point was passed
	// lateNotes counts the Late notes written (wait; the client's one loop goroutine).
	lateNotes int

	armMu sync.Mutex
	armed map[string]bool // points to stop at on each pass (StopAt.Every, then arm and disarm)
	// abandon ends the acquire attempt in flight (nil between attempts); steps are the aimed
	// usage steps waiting for a pass of their point during an attempt. Both under armMu.
	abandon context.CancelFunc
	steps   []pendingStep
}

// pendingStep is an aimed usage step told to the worker, waiting for the passes of its point.
type pendingStep struct {
	step, point string
	left        int // passes of point during an attempt still to go
}

// arm starts (on) or calls off (!on) the stops at each pass of point.
func (w *worker) arm(point string, on bool) {
	w.armMu.Lock()
	defer w.armMu.Unlock()
	w.armed[point] = on
}

// stopsAt reports whether the scenario asked to stop at this pass of point.
func (w *worker) stopsAt(point string, pass int) bool {
	w.armMu.Lock()
	defer w.armMu.Unlock()
	if w.armed[point] {
		return true
	}
	for _, s := range w.cfg.StopAt {
		if s.Point == point && s.Occurrence == pass {
			return true
		}
	}
	return false
}

func newWorker(cfg Config, out io.Writer, logger *slog.Logger) (*worker, error) {
	design, err := designOf(cfg)
	if err != nil {
		return nil, err
	}
	w := &worker{
		cfg: cfg, design: design, out: out, log: logger,
		rng:    rand.New(rand.NewPCG(uint64(cfg.Seed), 0x10c6c7ec)),
		passes: map[string]int{},
		armed:  map[string]bool{},
		store:  resource.Dial(cfg.Resource, cfg.Workload.Timeout.D()),
		clock:  clock.NewSkewed(cfg.Clock.Offset, cfg.Clock.Rate),
	}
	for _, s := range cfg.StopAt {
		if s.Every {
			w.armed[s.Point] = true
		}
	}
	w.env = locks.Env{
		Client: cfg.Client, Nodes: cfg.Endpoints.Nodes, Params: cfg.Endpoints.Params, Sentinel: cfg.Endpoints.Sentinel,
		Key: cfg.Key, TTL: cfg.TTL, Timeout: cfg.Workload.Timeout.D(), Point: w.point, Clock: w.clock, Role: cfg.Role,
		OnRenewal: w.renewed,
	}
	w.promise = design.PromiseLength(w.env)
	w.lock, err = design.New(w.env)
	if err != nil {
		return nil, fmt.Errorf("worker %s: build lock %s: %w", cfg.Client, cfg.Lock, err)
	}
	return w, nil
}

// designOf is the config's lock design: the external one it defines, or a registered one.
func designOf(cfg Config) (locks.Design, error) {
	if cfg.External != nil {
		return locks.ExternalDesign(*cfg.External), nil
	}
	return locks.Get(cfg.Lock)
}

func (w *worker) close() {
	_ = w.lock.Close()
	_ = w.store.Close()
}

// emit writes one event with one write call, stamped now.
func (w *worker) emit(e history.Event) {
	e.Time = history.Now()
	w.emitAt(e)
}

// emitAt writes one event stamped with its own Time.
func (w *worker) emitAt(e history.Event) {
	e.Process = w.cfg.Client
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	w.outMu.Lock()
	defer w.outMu.Unlock()
	if _, err := w.out.Write(line); err != nil {
		w.log.Error("write event", "err", err) // the controller is gone; Pdeathsig will end us
	}
}

func (w *worker) invoke(f string, e history.Event) int64 {
	e.Type, e.F, e.Op = history.Invoke, f, w.op.Add(1)
	w.emit(e)
	return e.Op
}

// promised marks a yes of the lock: how long it promised the lock, counted from since (its
// request's sending, when not the op's invoke; 0 for the invoke).
func (w *worker) promised(e history.Event, since int64) history.Event {
	e.Promise, e.Since = int64(w.promise), since
	return e
}

// renewed records a renewal the lock made on its own, as an invoke stamped when its request was
// sent and a completion stamped when its answer came.
func (w *worker) renewed(r locks.Renewal) {
	op := w.op.Add(1)
	w.emitAt(history.Event{Time: r.Asked, Type: history.Invoke, F: history.Renew, Op: op, Session: r.Session})
	done := history.Event{Time: max(r.Answered, r.Asked), Type: history.Fail, F: history.Renew, Op: op, Session: r.Session, Error: r.Error}
	switch {
	case r.OK:
		done = w.promised(done, 0)
		done.Type, done.Error = history.OK, ""
		if r.Lease > 0 {
			done.Promise = int64(r.Lease)
		}
	case r.Unknown:
		done.Type = history.Info
	}
	w.emitAt(done)
}

func (w *worker) complete(op int64, t history.Type, f string, e history.Event) {
	e.Type, e.F, e.Op = t, f, op
	w.emit(e)
}

// point is a program point: if the scenario asked to stop here this time, say so and stop the
// whole process. Everything freezes at once; the controller resumes or kills us.
func (w *worker) point(name string) {
	runtime.LockOSThread() // Gettid and Tgkill must name the same thread
	defer runtime.UnlockOSThread()
	w.passes[name]++
	pass := w.passes[name]
	w.stepAt(name, pass)
	if !w.stopsAt(name, pass) {
		return
	}
	w.emit(history.Event{Type: history.Note, F: Stopped, Point: name, Pass: pass})
	// First whatever else runs in our process group (an external design's program and
	// its threads: a library's heartbeat must not keep a session alive while we stand
	// still), then ourselves, last, so that nothing of the client runs on.
	if _, err := proc.StopGroupPeers(); err != nil {
		w.log.Error("stop the lock program", "point", name, "err", err)
	}
	// Directed at this thread, the stop takes effect before the syscall returns, so no
	// instruction past the point runs; the whole process stops with it.
	if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP); err != nil {
		w.log.Error("stop self", "point", name, "err", err)
	}
}

// loop acquires and releases until stop, after delay (the client's place in the stagger).
func (w *worker) loop(stop context.Context, delay time.Duration) error {
	w.wait(stop, delay)
	for stop.Err() == nil {
		token, held := w.acquire(stop)
		if err := w.broken(); err != nil {
			return err
		}
		if !held {
			continue
		}
		w.point(AfterAcquire)
		w.reenter()
		w.criticalSection(resource.Access{Client: w.cfg.Client, Token: token, Value: locks.ValueOf(w.lock)})
		w.release()
		if err := w.broken(); err != nil {
			return err
		}
		w.wait(stop, w.cfg.Workload.Think.D())
	}
	return nil
}

// broken reports a lock client that failed for good (locks.Breakable: an external program that
// died or broke the protocol) in a Broken note, and returns why; nil while it works.
func (w *worker) broken() error {
	b, ok := w.lock.(locks.Breakable)
	if !ok {
		return nil
	}
	err := b.Broken()
	if err != nil {
		w.emit(history.Event{Type: history.Note, F: Broken, Error: err.Error()})
		err = fmt.Errorf("worker %s: %w", w.cfg.Client, err)
	}
	return err
}

// acquire retries until it holds the lock, gives up after AcquireTimeout, or is told to stop.
// It is one operation in the history: ok (held), fail (certainly not held), or info (an attempt's
// outcome was unknown; the client does not believe it holds, but the key may exist).
func (w *worker) acquire(stop context.Context) (*int64, bool) {
	wl := w.cfg.Workload
	op := w.invoke(history.Acquire, history.Event{})
	bound := wl.AttemptBound()
	deadline := time.Now().Add(wl.AcquireTimeout.D())
	if wl.Usage.Try != nil { // one attempt: the wait it allows, and one command's time to answer
		bound = wl.Usage.Try.D() + wl.Timeout.D()
		deadline = time.Now().Add(bound)
	}
	var unknown error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		if d, ok := ctx.Deadline(); ok && d.After(deadline) {
			cancel()
			ctx, cancel = context.WithDeadline(context.Background(), deadline)
		}
		attempt := history.Now()
		w.attempting(cancel)
		token, err := w.lock.Acquire(ctx)
		w.attempting(nil)
		cancel()
		switch {
		case err == nil:
			w.held = locks.HeldRole(w.lock, w.cfg.Role)
			ok := w.promised(history.Event{Token: token, Role: w.held}, attempt)
			if w.design.Promise.RenewalsOnly {
				ok.Promise = 0
			}
			if p, is := w.lock.(locks.Promising); is {
				asked, session := p.Promised()
				ok.Since, ok.Session = max(asked, attempt), session
			}
			w.complete(op, history.OK, history.Acquire, ok)
			return token, true
		case !errors.Is(err, locks.ErrBusy):
			unknown = err
			w.log.Debug("acquire attempt failed", "err", err)
		}
		backoff := wl.BackoffMin.D()
		if wl.BackoffMax > wl.BackoffMin {
			backoff += time.Duration(w.rng.Int64N(int64(wl.BackoffMax - wl.BackoffMin)))
		}
		if wl.Usage.Try != nil || time.Now().Add(backoff).After(deadline) || !w.wait(stop, backoff) {
			if unknown != nil {
				w.complete(op, history.Info, history.Acquire, history.Event{Error: unknown.Error()})
			} else {
				w.complete(op, history.Fail, history.Acquire, history.Event{Error: "gave up: lock busy"})
			}
			return nil, false
		}
	}
}

// reenter nests the workload's depth of inner acquires and gives them back, innermost first,
// before the hold's work, as code that called helpers taking the same lock carries on after them:
// the outer hold must survive the inner releases. It stops nesting at the first refusal.
func (w *worker) reenter() {
	nested := 0
	for nested < w.cfg.Workload.Depth() && w.nest(history.Reacquire) {
		nested++
	}
	for ; nested > 0; nested-- {
		w.nest(history.Rerelease)
	}
}

// nest takes the lock once more (Reacquire) or gives the inner level back (Rerelease), for
// reentrant designs; it reports whether the step succeeded.
func (w *worker) nest(f string) bool {
	op := w.invoke(f, history.Event{})
	ctx, cancel := w.opContext()
	defer cancel()
	var err error
	if f == history.Reacquire {
		_, err = w.lock.Acquire(ctx)
	} else {
		err = w.lock.Release(ctx)
	}
	switch {
	case err == nil && f == history.Reacquire:
		w.complete(op, history.OK, f, w.promised(history.Event{}, 0))
		return true
	case err == nil:
		w.complete(op, history.OK, f, history.Event{})
		return true
	case errors.Is(err, locks.ErrBusy), errors.Is(err, locks.ErrNotHeld):
		w.complete(op, history.Fail, f, history.Event{Error: err.Error()})
	default:
		w.complete(op, history.Info, f, history.Event{Error: err.Error()})
	}
	return false
}

// stillValid checks, for designs that know their validity, that it has not ended (a check op: ok,
// or fail and a note that the client no longer believes it holds the lock). A check that asked
// the servers and was told yes (locks.Design.Promise.CheckAsks, or an external program's answer)
// is a promise.
func (w *worker) stillValid() bool {
	e, ok := w.lock.(locks.Expiring)
	if !ok {
		return true
	}
	op := w.invoke(history.Check, history.Event{})
	if until := e.ValidUntil(); !until.IsZero() && w.clock.Now().After(until) {
		w.complete(op, history.Fail, history.Check, history.Event{})
		w.emit(history.Event{Type: history.Note, F: history.Lost, Error: "validity ended"})
		return false
	}
	yes := history.Event{}
	if w.design.Promise.CheckAsks || locks.CheckAsked(w.lock) {
		yes = w.promised(yes, 0)
	}
	w.complete(op, history.OK, history.Check, yes)
	return true
}

// criticalSection reads every register, works for Hold, then writes value+1 to each register whose
// read was accepted. Ops that time out are recorded as info with outcome unknown. a carries the
// lock's token and value, presented with every access.
func (w *worker) criticalSection(a resource.Access) {
	if !w.stillValid() {
		return
	}
	w.cs++
	cs, token := w.cs, a.Token
	a.CS = cs
	op := w.invoke(history.Read, history.Event{CS: cs, Token: token})
	ctx, cancel := w.opContext()
	read, err := w.store.Read(ctx, a, a.Usable())
	cancel()
	if err != nil {
		w.complete(op, history.Info, history.Read, history.Event{CS: cs, Token: token, Error: err.Error()})
		return // nothing known to build a write on
	}
	w.complete(op, history.OK, history.Read, history.Event{CS: cs, Token: token, Registers: read})

	w.wait(context.Background(), w.cfg.Workload.Hold.D())
	if w.held == locks.ReadRole {
		return // a read hold's section is read-only
	}
	w.point(BeforeWrite)
	if !w.stillValid() {
		return // the read stays in the history as a read-only access
	}
	w.point(AfterValidityCheck)

	values := map[string]int64{}
	for name, r := range read {
		if r.Status == history.Accepted {
			values[name] = r.Value + 1
		}
	}
	if len(values) == 0 {
		return
	}
	op = w.invoke(history.Write, history.Event{CS: cs, Token: token, Registers: unknownRegisters(values)})
	ctx, cancel = w.opContext()
	written, err := w.store.Write(ctx, a, values)
	cancel()
	if err != nil {
		w.complete(op, history.Info, history.Write, history.Event{CS: cs, Token: token, Registers: unknownRegisters(values), Error: err.Error()})
		return
	}
	w.complete(op, history.OK, history.Write, history.Event{CS: cs, Token: token, Registers: written})
}

func unknownRegisters(values map[string]int64) map[string]history.Register {
	out := map[string]history.Register{}
	for name, v := range values {
		out[name] = history.Register{Value: v, Status: history.Unknown}
	}
	return out
}

// release gives the lock back; a release whose outcome was unknown is sent again up to the
// workload's release-retry times, each a release of its own in the history.
func (w *worker) release() {
	for try := 0; ; try++ {
		op := w.invoke(history.Release, history.Event{})
		ctx, cancel := w.opContext()
		err := w.lock.Release(ctx)
		cancel()
		switch {
		case err == nil:
			w.complete(op, history.OK, history.Release, history.Event{})
			return
		case errors.Is(err, locks.ErrNotHeld):
			w.complete(op, history.Fail, history.Release, history.Event{Error: err.Error()})
			return
		}
		w.complete(op, history.Info, history.Release, history.Event{Error: err.Error()})
		if try >= w.cfg.Workload.Usage.ReleaseRetry {
			return
		}
	}
}

// attempting records the acquire attempt in flight (its cancel), or that none is (nil).
func (w *worker) attempting(cancel context.CancelFunc) {
	w.armMu.Lock()
	defer w.armMu.Unlock()
	w.abandon = cancel
}

// step takes an aimed usage step the controller asked for: abandon the acquire attempt in flight
// now, or at the Occurrence-th pass of Point during an attempt from now on.
func (w *worker) step(c Command) {
	if c.Step != locks.UsageAbandon {
		w.emit(history.Event{Type: history.Note, F: history.Abandoned, Error: fmt.Sprintf("unknown usage step %q", c.Step)})
		return
	}
	w.armMu.Lock()
	defer w.armMu.Unlock()
	if c.Point != "" {
		w.steps = append(w.steps, pendingStep{step: c.Step, point: c.Point, left: max(c.Occurrence, 1)})
		return
	}
	if w.abandon == nil {
		w.emit(history.Event{Type: history.Note, F: history.Abandoned, Error: "no acquire attempt in flight"})
		return
	}
	w.abandonNow("", 0)
}

// stepAt takes the steps due at this pass of point: it counts only during an acquire attempt.
func (w *worker) stepAt(point string, pass int) {
	w.armMu.Lock()
	defer w.armMu.Unlock()
	if w.abandon == nil {
		return
	}
	for i := 0; i < len(w.steps); i++ {
		if s := &w.steps[i]; s.point == point {
			if s.left--; s.left == 0 {
				w.steps = append(w.steps[:i], w.steps[i+1:]...)
				w.abandonNow(point, pass)
				return // the attempt is over: one step a pass
			}
		}
	}
}

// abandonNow cancels the attempt in flight and notes it, before the lock's code goes on. Call with
// armMu held.
func (w *worker) abandonNow(point string, pass int) {
	w.emit(history.Event{Type: history.Note, F: history.Abandoned, Point: point, Pass: pass})
	w.abandon()
	w.abandon = nil
}

// opContext bounds one operation other than an acquire attempt (Workload.AttemptBound): Timeout
// per command, and a few commands per operation (a release may take a script or several
// statements).
func (w *worker) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 4*w.cfg.Workload.Timeout.D())
}

// Late notes: a wait that ends this much later than asked is written down (a timer fires a
// millisecond or two late on an idle machine), at most maxLateNotes times a client.
const (
	lateNoteAfter = 20 * time.Millisecond
	maxLateNotes  = 100
)

// wait is sleep, and writes a Late note when the machine woke the client lateNoteAfter or more
// after it asked: the history then shows how busy the machine was, for the checker to weigh.
func (w *worker) wait(stop context.Context, d time.Duration) bool {
	began := time.Now()
	full := sleep(stop, d)
	if late := time.Since(began) - d; full && d > 0 && late >= lateNoteAfter && w.lateNotes < maxLateNotes {
		w.lateNotes++
		w.emit(history.Event{Type: history.Note, F: history.Late, Duration: int64(late)})
	}
	return full
}

// sleep waits d or until stop; it reports whether the full time passed.
func sleep(stop context.Context, d time.Duration) bool {
	if d <= 0 {
		return stop.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop.Done():
		return false
	}
}

// Run is the entry point of `lockcheck worker`.
func Run() error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return Main(os.Stdin, os.Stdout, logger)
}
