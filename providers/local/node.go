package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockcheck/lockcheck/internal/portlock"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/faketime"
)

const (
	// startTimeout bounds one start, from fork to ready (a ZooKeeper JVM takes about a second).
	startTimeout = 30 * time.Second
	// portAttempts is how often a start tries again when its port was taken: a first start on
	// fresh ports, a restart on the same ports (proxies point at them) after a short wait.
	portAttempts = 5
	// readyPoll is how often readiness is polled.
	readyPoll = 5 * time.Millisecond
)

// errPortInUse means the server could not bind one of its ports: someone took it after the
// provider picked it.
var errPortInUse = errors.New("port already in use")

// node is one server process: the current one (a new one after each Restart), and what stays the
// same across restarts (ports, folder, clock).
type node struct {
	p       *Provider
	spec    providers.NodeSpec
	dir     string
	clock   *faketime.Clock // nil without spec.Clock, or when libfaketime is missing (noClock says so)
	noClock error
	cred    *syscall.Credential

	restartMu sync.Mutex // serialises Restart and Stop

	mu       sync.Mutex // guards what follows
	ports    map[string]int
	held     []*portlock.Reservation // the node's ports, reserved until Stop (see firstStart)
	cur      *proc.Process
	logStart int64 // size of the log when cur started
	closed   bool
}

func newNode(p *Provider, spec providers.NodeSpec) (*node, error) {
	dir, err := nodeDir(p.o.Dir, spec.Name)
	if err != nil {
		return nil, err
	}
	n := &node{p: p, spec: spec, dir: dir}
	if err := n.reservePorts(); err != nil {
		return nil, err
	}
	if spec.Clock {
		if err := faketime.Check(); err != nil {
			n.noClock = err
			p.o.Logger.Debug("node starts without libfaketime: its clock cannot be set", "node", spec.Name, "err", err)
		} else if n.clock, err = faketime.New(filepath.Join(dir, faketime.FileName)); err != nil {
			return nil, fmt.Errorf("node %s: %w", spec.Name, err)
		}
	}
	if spec.User != "" && os.Geteuid() == 0 {
		if n.cred, err = credential(spec.User, dir); err != nil {
			return nil, fmt.Errorf("node %s: %w", spec.Name, err)
		}
	}
	return n, nil
}

// reservePorts picks fresh ports and reserves them (portlock): the server binds them beside the
// reservation, and while it is starting, down or restarting no other socket gets them.
func (n *node) reservePorts() error {
	var held []*portlock.Reservation
	for range n.spec.Ports {
		r, err := portlock.Fresh()
		if err != nil {
			for _, r := range held {
				r.Close()
			}
			return fmt.Errorf("node %s: %w", n.spec.Name, err)
		}
		held = append(held, r)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ports = map[string]int{}
	for i, pt := range n.spec.Ports {
		n.ports[pt.Name] = held[i].Port()
	}
	n.held = held
	return nil
}

func (n *node) releasePorts() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.held {
		l.Close()
	}
	n.held = nil
}

// credential returns user's ids, after giving it dir (a server that refuses root must own its
// data folder).
func credential(name, dir string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("run as user %s: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (n *node) port(name string) (providers.Port, bool) {
	for _, pt := range n.spec.Ports {
		if pt.Name == name {
			return pt, true
		}
	}
	return providers.Port{}, false
}

func (n *node) placement() providers.Placement {
	n.mu.Lock()
	ports := make(map[string]int, len(n.ports))
	for k, v := range n.ports {
		ports[k] = v
	}
	n.mu.Unlock()
	return providers.Placement{Host: "127.0.0.1", Ports: ports, Dir: n.dir, HostDir: n.dir,
		Peer:   func(to, port string) (string, error) { return n.p.peer(n.spec.Name, to, port) },
		Direct: n.p.direct}
}

// Name is the node's name.
func (n *node) Name() string { return n.spec.Name }

// Addr is 127.0.0.1 and the port's number; "" for an unknown port.
func (n *node) addr(port string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.ports[port]
	if !ok {
		return ""
	}
	return hostPort(p)
}

// Addr is where the harness reaches the port.
func (n *node) Addr(port string) string { return n.addr(port) }

// Advertised is Addr: locally, servers know each other by their real addresses.
func (n *node) Advertised(port string) string { return n.addr(port) }

// Dir is the node's folder.
func (n *node) Dir() string { return n.dir }

// Pid is the current process's id (0 when none runs): for tests.
func (n *node) Pid() int {
	if p := n.process(); p != nil {
		return p.Pid()
	}
	return 0
}

func (n *node) process() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cur
}

func (n *node) running() (*proc.Process, error) {
	p := n.process()
	if p == nil {
		return nil, fmt.Errorf("node %s: not running", n.spec.Name)
	}
	return p, nil
}

// Pause freezes the server's process group (SIGSTOP).
func (n *node) Pause() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	return p.Stop()
}

// Resume lets it go on (SIGCONT).
func (n *node) Resume() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	return p.Cont()
}

// Kill sends SIGKILL to the server's process group without waiting.
func (n *node) Kill() error {
	p, err := n.running()
	if err != nil {
		return err
	}
	return p.Kill()
}

// SetClock sets the node's clock through libfaketime.
func (n *node) SetClock(offset time.Duration, rate float64) error {
	if n.clock == nil {
		if n.noClock != nil {
			return fmt.Errorf("node %s: %w: it was started without libfaketime: %w", n.spec.Name, providers.ErrNoClock, n.noClock)
		}
		return fmt.Errorf("node %s: %w", n.spec.Name, providers.ErrNoClock)
	}
	if err := n.clock.Set(offset, rate); err != nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, err)
	}
	return nil
}

// firstStart starts the server on the reserved ports. A server that refuses to bind beside the
// reservation (one that does not set SO_REUSEADDR) reports the port in use: it is started again
// on fresh ports given back just before, as a picked free port would be.
func (n *node) firstStart(ctx context.Context) error {
	n.restartMu.Lock()
	defer n.restartMu.Unlock()
	err := n.launch(ctx)
	for i := 1; i < portAttempts && errors.Is(err, errPortInUse); i++ {
		n.p.o.Logger.Debug("port in use, retrying on fresh ports", "node", n.spec.Name, "err", err)
		n.releasePorts()
		if err := n.reservePorts(); err != nil {
			return err
		}
		n.releasePorts()
		err = n.launch(ctx)
	}
	return err
}

// Restart kills the server if it runs and starts it again on the same ports with the same folder
// and clock, then waits until it is ready. If someone took a port while it was down, it tries a
// few times before giving up: the port cannot move, proxies point at it.
func (n *node) Restart(ctx context.Context) error {
	n.restartMu.Lock()
	defer n.restartMu.Unlock()
	if err := n.killAndWait(); err != nil {
		return err
	}
	var err error
	for i := 0; i < portAttempts; i++ {
		if err = n.launch(ctx); !errors.Is(err, errPortInUse) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// Stop kills the server for good: no Restart afterwards.
func (n *node) Stop() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.releasePorts()
	err := n.killAndWait()
	n.restartMu.Lock() // wait for a start in progress, which now fails
	defer n.restartMu.Unlock()
	return errors.Join(err, n.killAndWait())
}

func (n *node) killAndWait() error {
	p := n.process()
	if p == nil {
		return nil
	}
	if err := p.Kill(); err != nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, err)
	}
	_ = p.Wait() // "signal: killed" is what we asked for
	return nil
}

// launch starts one process and waits until it is ready; on failure the process is killed.
func (n *node) launch(ctx context.Context) error {
	n.mu.Lock()
	closed := n.closed
	n.mu.Unlock()
	if closed {
		return fmt.Errorf("node %s: stopped", n.spec.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	args, err := n.spec.Command(n.placement())
	if err != nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, err)
	}
	if len(args) == 0 {
		return fmt.Errorf("node %s: empty command", n.spec.Name)
	}
	logFile := filepath.Join(n.dir, n.spec.LogFile)
	if n.spec.LogFile == "" {
		logFile = filepath.Join(n.dir, "server.log")
	}
	logf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), n.spec.Env...)
	if n.clock != nil {
		if err := n.clock.Starting(); err != nil {
			logf.Close()
			return fmt.Errorf("node %s: %w", n.spec.Name, err)
		}
		cmd.Env = append(cmd.Env, faketime.Env(n.clock.Path())...)
	}
	if n.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
		_ = logf.Chown(int(n.cred.Uid), int(n.cred.Gid))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	began := time.Now()
	p, err := proc.StartProcess(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("node %s: start %s: %w", n.spec.Name, args[0], err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = p.Kill()
		_ = p.Wait()
		return fmt.Errorf("node %s: stopped", n.spec.Name)
	}
	n.cur, n.logStart = p, logStart
	n.mu.Unlock()

	if err := n.waitReady(ctx, p); err != nil {
		_ = p.Kill()
		_ = p.Wait()
		tail := providers.LogTail(logFile, logStart)
		if strings.Contains(strings.ToLower(tail), "address already in use") {
			return fmt.Errorf("node %s: %w", n.spec.Name, errPortInUse)
		}
		return fmt.Errorf("node %s (%s) not ready: %w; %s:\n%s", n.spec.Name, args[0], err, logFile, tail)
	}
	n.p.o.Logger.Debug("node ready", "node", n.spec.Name, "pid", p.Pid(), "ports", n.placement().Ports, "took", time.Since(began))
	return nil
}

// waitReady polls until the spec's Ready check passes and the process itself listens on the
// node's first port (so a server of someone else that already held the port does not count), p
// exits, or ctx ends.
func (n *node) waitReady(ctx context.Context, p *proc.Process) error {
	first := n.spec.Ports[0].Name
	n.mu.Lock()
	port := n.ports[first]
	n.mu.Unlock()
	// Abandon a Ready attempt as soon as the process exits (someone else's listener may accept
	// our connection and never answer).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	var last error
	for {
		select {
		case <-p.Exited():
			return fmt.Errorf("exited: %v", p.Wait())
		default:
		}
		last = nil
		if n.spec.Ready != nil {
			last = n.spec.Ready(ctx, n)
		}
		if last == nil {
			ok, err := proc.ListensOn(p.Pid(), port)
			switch {
			case err != nil:
				last = err
			case !ok:
				last = fmt.Errorf("port %d (%s) is not listened on by pid %d", port, first, p.Pid())
			default:
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("exited: %v", p.Wait())
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last)
		case <-time.After(readyPoll):
		}
	}
}
