package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
)

// Worker is the controller's handle on one worker process.
type Worker struct {
	Name string
	proc *proc.Process

	mu    sync.Mutex
	stdin io.WriteCloser

	// Events delivers what the worker writes, in order; it is closed when the worker's stdout
	// closes (it exited or was killed).
	Events <-chan history.Event

	ready  chan struct{} // closed when the worker says Ready
	closed chan struct{} // closed when its stdout closes
	whyMu  sync.Mutex
	why    string     // the Error of its Broken note
	stderr *lastLines // the end of its log, for a worker that dies without a note
}

// Spawn starts `command...` as a worker with cfg. Its stderr (logs) goes to stderr.
func Spawn(command []string, env []string, cfg Config, stderr io.Writer) (*Worker, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = oneProcessor(env)
	last := &lastLines{}
	cmd.Stderr = io.MultiWriter(stderr, last)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := proc.StartProcess(cmd)
	if err != nil {
		return nil, fmt.Errorf("start worker %s: %w", cfg.Client, err)
	}
	events := make(chan history.Event, 256)
	w := &Worker{Name: cfg.Client, proc: p, stdin: stdin, Events: events,
		ready: make(chan struct{}), closed: make(chan struct{}), stderr: last}
	go func() {
		defer close(events)
		defer close(w.closed)
		readySeen := false
		lines := bufio.NewScanner(stdout)
		lines.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for lines.Scan() {
			var e history.Event
			if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
				// A line cut by SIGKILL mid-write: nothing after it is coming either.
				continue
			}
			if e.Type == history.Note && e.F == Ready && !readySeen {
				readySeen = true
				close(w.ready)
				continue // a handshake, not history
			}
			if e.Type == history.Note && e.F == Broken {
				w.whyMu.Lock()
				w.why = e.Error
				w.whyMu.Unlock()
			}
			events <- e
		}
	}()
	if err := w.send(mustJSON(cfg)); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("configure worker %s: %w", cfg.Client, err)
	}
	return w, nil
}

// oneProcessor runs a worker's Go runtime on one processor unless env says otherwise (GOMAXPROCS).
// A client is one loop waiting on the network; with a processor per core its runtime wakes idle
// threads to look for work at every reply, which on two cores, a grid's workers side by side and
// dear context switches cost about an eighth of a worker's CPU. Programs the worker starts (an
// adapter in Go) inherit it.
func oneProcessor(env []string) []string {
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") }) {
		return env
	}
	return append(slices.Clip(env), "GOMAXPROCS=1")
}

// WaitReady waits until the worker has built its lock client. It fails with the worker's own
// reason if it could not (its Broken note), or if it exits or ctx ends first.
func (w *Worker) WaitReady(ctx context.Context) error {
	select {
	case <-w.ready:
		return nil
	case <-w.closed:
		if why := w.BrokenReason(); why != "" {
			return fmt.Errorf("%s: %s", w.Name, why)
		}
		select { // its log is complete once it is reaped
		case <-w.proc.Exited():
		case <-time.After(2 * time.Second):
		}
		return fmt.Errorf("%s: the worker exited before its lock client was ready; its log ends: %s", w.Name, w.stderr.String())
	case <-ctx.Done():
		return fmt.Errorf("%s: lock client not ready: %w", w.Name, ctx.Err())
	}
}

// BrokenReason is the Error of the worker's Broken note, "" if it wrote none.
func (w *Worker) BrokenReason() string {
	w.whyMu.Lock()
	defer w.whyMu.Unlock()
	return w.why
}

// Go starts a worker whose config said AwaitGo, its StartDelay counted from at (history.Now;
// every client of a run is given the same).
func (w *Worker) Go(at int64) error { return w.send(mustJSON(Command{Cmd: "go", At: at})) }

// Process is the worker's OS process, for the nemesis to pause or kill.
func (w *Worker) Process() *proc.Process { return w.proc }

// SetClock sets the client's clock to real time + offset, running at rate.
func (w *Worker) SetClock(offset time.Duration, rate float64) error {
	return w.send(mustJSON(Command{Cmd: "clock", Clock: ClockSetting{Offset: offset, Rate: rate}}))
}

// Arm makes the worker stop at each pass of point (as StopAt.Every does from the start).
func (w *Worker) Arm(point string) error {
	return w.send(mustJSON(Command{Cmd: "arm", Point: point}))
}

// Step tells the worker an aimed usage step: take it now, or at the occurrence-th pass of point
// during an acquire attempt from now on.
func (w *Worker) Step(step, point string, occurrence int) error {
	return w.send(mustJSON(Command{Cmd: "step", Step: step, Point: point, Occurrence: occurrence}))
}

// Disarm calls off the worker's stops at each pass of point.
func (w *Worker) Disarm(point string) error {
	return w.send(mustJSON(Command{Cmd: "disarm", Point: point}))
}

// Finish asks the worker to finish its current cycle, release, and exit.
func (w *Worker) Finish() error { return w.send(StopCommand) }

func (w *Worker) send(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.stdin.Write(line)
	return err
}

// lastLines keeps the end of what is written to it (a worker's log).
type lastLines struct {
	mu  sync.Mutex
	buf []byte
}

const lastLinesMax = 2048

func (l *lastLines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	if over := len(l.buf) - lastLinesMax; over > 0 {
		l.buf = l.buf[over:]
	}
	return len(b), nil
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.buf))
}
