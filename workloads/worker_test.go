package workloads_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/testmain"
	"github.com/lockcheck/lockcheck/internal/testredis"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/workloads"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// redisServer starts a real redis-server; it serves as both the lock's node and the resource.
func redisServer(t *testing.T) string { return testredis.Addr(t, "n1") }

// config is a client of the redis-py adapter (an external program: Python and redis-py).
func config(addr string) workloads.Config {
	return workloads.Config{
		Client: "client-1", Lock: "redis-py", Endpoints: locks.Endpoints{Nodes: []string{addr}}, Resource: addr,
		Key: "test:lock", TTL: 10 * time.Second, Seed: 1, AwaitGo: true,
		Workload: workloads.Workload{AcquireTimeout: yamltime.Duration(2 * time.Second), BackoffMin: yamltime.Duration(5 * time.Millisecond),
			BackoffMax: yamltime.Duration(20 * time.Millisecond), Timeout: yamltime.Duration(time.Second), Think: yamltime.Duration(10 * time.Millisecond)},
	}
}

// groupPeers lists the processes in process group pgid other than its leader: the lock program.
func groupPeers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil && g == pgid {
			if st, err := proc.StateOf(pid); err == nil && st != 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitState polls until every pid is in a state ok accepts.
func waitState(t *testing.T, pids []int, what string, ok func(byte) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for {
			st, err := proc.StateOf(pid)
			if err == nil && ok(st) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d is not %s (state %c, %v)", pid, what, st, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func stopped(st byte) bool { return st == 'T' }
func running(st byte) bool { return st != 'T' && st != 't' }

func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for {
			st, err := proc.StateOf(pid)
			if err != nil || st == 'Z' {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lock program %d outlived its worker (state %c)", pid, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// An external design's program runs in its worker's process group: a program point stops it
// with the worker (so a library's own threads cannot keep a session alive), the nemesis's pause
// of the client (SIGSTOP of the group) freezes it, and a kill of the client kills it.
func TestLockProgramIsPausedStoppedAndKilledWithItsWorker(t *testing.T) {
	addr := redisServer(t)
	cfg := config(addr)
	cfg.StopAt = []workloads.StopAt{{Point: workloads.AfterAcquire, Occurrence: 1}}
	w, err := workloads.Spawn([]string{os.Args[0]}, append(os.Environ(), workloads.TestWorkerEnv), cfg, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Process().Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	prog := groupPeers(t, w.Process().Pid())
	if len(prog) == 0 {
		t.Fatal("no lock program in the worker's process group")
	}

	atPoint := make(chan history.Event, 1)
	go func() {
		for e := range w.Events {
			if e.F == workloads.Stopped {
				atPoint <- e
			}
		}
	}()
	if err := w.Go(history.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-atPoint:
		if e.Point != workloads.AfterAcquire {
			t.Fatalf("stopped at %q", e.Point)
		}
	case <-ctx.Done():
		t.Fatal("the worker never reached after-acquire")
	}
	if err := w.Process().WaitStopped(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(t, prog, "stopped with its worker at the program point", stopped)

	if err := w.Process().Cont(); err != nil {
		t.Fatal(err)
	}
	waitState(t, prog, "resumed with its worker", running)

	if err := w.Process().Stop(); err != nil { // the nemesis's pause of the client
		t.Fatal(err)
	}
	waitState(t, append(prog, w.Process().Pid()), "paused with the client", stopped)
	if err := w.Process().Cont(); err != nil {
		t.Fatal(err)
	}
	waitState(t, prog, "resumed with the client", running)

	if err := w.Process().Kill(); err != nil { // the nemesis's kill of the client
		t.Fatal(err)
	}
	waitGone(t, prog)
}

// If the worker dies alone (not its whole group), its lock program dies too: the parent-death
// signal. The worker here is started directly, without internal/proc, whose reaper would kill the
// group and hide a missing signal.
func TestLockProgramDiesWhenItsWorkerDiesAlone(t *testing.T) {
	addr := redisServer(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workloads.TestWorkerEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() }()
	line, _ := json.Marshal(config(addr))
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var e history.Event
			if json.Unmarshal(lines.Bytes(), &e) == nil && e.F == workloads.Ready {
				ready <- true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("worker not ready")
	}
	prog := groupPeers(t, pid)
	if len(prog) == 0 {
		t.Fatal("no lock program in the worker's process group")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // the worker alone
		t.Fatal(err)
	}
	waitGone(t, prog)
}
