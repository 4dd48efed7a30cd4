// Package proc starts child processes that die with the harness.
//
// Every child gets its own process group (Setpgid), so a Ctrl-C typed in the controller's terminal
// reaches only the controller, which then cleans up (KillAll); and a parent-death signal
// (Pdeathsig: SIGKILL), so a controller that is itself SIGKILLed still takes its children down.
//
// Linux delivers the parent-death signal when the *thread* that forked the child exits, not when
// the process does. The Go runtime may run a goroutine on any thread, and it does terminate a
// thread when a goroutine that locked it exits without unlocking. So every fork in this package
// happens on one dedicated goroutine that locks itself to its OS thread and never returns: that
// thread lives exactly as long as the process, and the signal fires only when the process dies.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrExited is returned by Stop and Cont once the process has exited.
var ErrExited = errors.New("process has exited")

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	forkerOnce sync.Once
	forkerCh   chan startReq
)

// forker runs on a goroutine locked to its OS thread for the life of the process; it never
// unlocks and never returns, so the thread that forks the children never exits before we do.
func forker() {
	runtime.LockOSThread()
	for req := range forkerCh {
		req.done <- req.cmd.Start()
	}
}

// Start sets cmd up to die with us (own process group, Pdeathsig SIGKILL) and starts it from the
// dedicated forking thread. Fields already set in cmd.SysProcAttr are kept.
//
// Start does not track the process: the caller must Wait for it, and KillAll does not know it.
// Use StartProcess for a tracked, automatically reaped process.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL

	return fork(cmd)
}

// fork starts cmd from the dedicated forking thread.
func fork(cmd *exec.Cmd) error {
	forkerOnce.Do(func() {
		forkerCh = make(chan startReq)
		go forker()
	})
	done := make(chan error, 1)
	forkerCh <- startReq{cmd: cmd, done: done}
	return <-done
}

// Process is a started child process, leader of its own process group. It is reaped
// automatically as soon as it exits (no zombies), and listed in the registry KillAll uses until
// then.
type Process struct {
	cmd *exec.Cmd
	pid int

	mu     sync.Mutex
	reaped bool // set (under mu) once the leader has exited and is about to be reaped

	exited  chan struct{}
	waitErr error
}

// StartProcess starts cmd like Start and returns it as a tracked Process.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	if err := Start(cmd); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	register(p)
	go p.reap()
	return p, nil
}

// reap waits for the leader to exit without reaping it (the zombie keeps the pid, and so the
// process group id, from being reused), kills whatever is left of its group, then reaps it.
func (p *Process) reap() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	p.mu.Lock()
	_ = syscall.Kill(-p.pid, syscall.SIGKILL) // stragglers in the group; ESRCH if none
	p.reaped = true
	p.mu.Unlock()

	p.waitErr = p.cmd.Wait()
	unregister(p)
	close(p.exited)
}

// Pid is the process id (also its process group id).
func (p *Process) Pid() int { return p.pid }

// Cmd is the command the process was started from.
func (p *Process) Cmd() *exec.Cmd { return p.cmd }

// signalGroup sends sig to the process group while the leader has not been reaped, so the group
// id cannot belong to anyone else yet.
func (p *Process) signalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return ErrExited
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to process group %d: %w", sig, p.pid, err)
	}
	return nil
}

// Stop freezes the process with SIGSTOP (sent to its whole process group, so any helper it
// started freezes too). It returns ErrExited if the process is gone.
func (p *Process) Stop() error { return p.signalGroup(syscall.SIGSTOP) }

// Cont resumes the process (and its group) with SIGCONT. It returns ErrExited if the process is
// gone.
func (p *Process) Cont() error { return p.signalGroup(syscall.SIGCONT) }

// Kill sends SIGKILL to the whole process group. It is idempotent and a no-op (nil) once the
// process has exited. It does not wait: use Wait or Exited for that.
func (p *Process) Kill() error {
	err := p.signalGroup(syscall.SIGKILL)
	if errors.Is(err, ErrExited) {
		return nil
	}
	return err
}

// Wait waits for the process to exit and returns what exec.Cmd.Wait returned. Any number of
// goroutines may call it; they all get the same result.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// State returns the process state letter from /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or an
// error once the process is gone.
func (p *Process) State() (byte, error) {
	select {
	case <-p.exited:
		return 0, ErrExited
	default:
	}
	return StateOf(p.pid)
}

// StateOf returns the state letter of any pid from /proc/<pid>/stat.
func StateOf(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may contain spaces and parentheses, so look after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// WaitStopped polls until the process is in the stopped state ('T'), e.g. after it stopped
// itself with SIGSTOP at a program point. It fails if the process exits or ctx ends first.
func (p *Process) WaitStopped(ctx context.Context) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		st, err := p.State()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			// /proc/PID is gone: our own Wait has reaped it, and closes exited right after.
			select {
			case <-p.exited:
				return fmt.Errorf("process %d exited before stopping: %w", p.pid, ErrExited)
			case <-ctx.Done():
				return fmt.Errorf("process %d: %w", p.pid, ctx.Err())
			}
		}
		if err != nil {
			return err
		}
		if st == 'T' {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d not stopped (state %c): %w", p.pid, st, ctx.Err())
		case <-p.exited:
			return fmt.Errorf("process %d exited before stopping: %w", p.pid, ErrExited)
		case <-t.C:
		}
	}
}

// The registry of live processes.
var (
	regMu sync.Mutex
	live  = map[*Process]struct{}{}
)

func register(p *Process) {
	regMu.Lock()
	live[p] = struct{}{}
	regMu.Unlock()
}

func unregister(p *Process) {
	regMu.Lock()
	delete(live, p)
	regMu.Unlock()
}

// Live returns the processes started with StartProcess that have not exited yet.
func Live() []*Process {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]*Process, 0, len(live))
	for p := range live {
		out = append(out, p)
	}
	return out
}

// KillAll SIGKILLs every live process (and its group) and waits up to 5s for them to be reaped;
// it returns an error naming any still alive after that (a process stuck in the kernel). It is
// meant for the controller's Ctrl-C and exit paths and for test cleanup.
func KillAll() error {
	ps := Live()
	for _, p := range ps {
		_ = p.Kill()
	}
	deadline := time.After(5 * time.Second)
	expired := false
	var stuck []int
	for _, p := range ps {
		if !expired {
			select {
			case <-p.exited:
				continue
			case <-deadline:
				expired = true
			}
		}
		select {
		case <-p.exited:
		default:
			stuck = append(stuck, p.pid)
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("processes still alive after SIGKILL: %v", stuck)
	}
	return nil
}

// Mentioning lists the live (not zombie) processes whose command line contains s, e.g. a run
// folder: how tests prove that nothing they started is left running.
func Mentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		if st, err := StateOf(pid); err == nil && st != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// StartInGroup starts cmd in the caller's own process group (no Setpgid), with a parent-death
// signal (SIGKILL), from the dedicated forking thread. It is for a helper that must share the
// caller's fate: a SIGSTOP or SIGKILL of the caller's group reaches it, and it dies if the caller
// dies alone. The caller must Wait for it.
func StartInGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL

	return fork(cmd)
}

// StopGroupPeers sends SIGSTOP to every other process in the caller's process group (helpers it
// started with StartInGroup, and theirs), not to the caller itself: a caller about to stop itself
// exactly (tgkill of its own thread) stops its helpers first, so that nothing in the group runs
// on. It returns the pids it stopped.
func StopGroupPeers() ([]int, error) {
	self := os.Getpid()
	pgrp := unix.Getpgrp()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var stopped []int
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if g, err := unix.Getpgid(pid); err != nil || g != pgrp {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("stop %d: %w", pid, err))
			continue
		}
		stopped = append(stopped, pid)
	}
	return stopped, errors.Join(errs...)
}
