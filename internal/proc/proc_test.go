package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "LOCKCHECK_PROC_TEST_HELPER"

// TestMain doubles as a helper parent process when re-executed with helperEnv set.
func TestMain(m *testing.M) {
	if spec := os.Getenv(listenHelperEnv); spec != "" {
		listenHelper(spec)
	}
	switch os.Getenv(helperEnv) {
	case "":
	case "parent":
		helperParent(false)
	case "parent-thread-exit":
		helperParent(true)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode")
		os.Exit(2)
	}
	code := m.Run()
	if err := KillAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// helperParent starts `sleep 60` through Start, prints its pid, and waits to be killed. With
// threadExit, Start is called from a goroutine whose OS thread then exits (a locked goroutine
// returning without unlocking): the child must survive that, since it was forked elsewhere.
func helperParent(threadExit bool) {
	cmd := exec.Command("sleep", "60")
	var err error
	if threadExit {
		// Keep the main thread for the main goroutine: a goroutine running on the main thread
		// would have it parked rather than exited when it ends locked.
		runtime.LockOSThread()
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: this thread exits with the goroutine
			err = Start(cmd)
		}()
		<-done
	} else {
		err = Start(cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	go cmd.Wait()
	time.Sleep(time.Minute)
	os.Exit(0)
}

// gone reports whether pid no longer runs (absent, or a zombie nobody reaped yet: in a container
// PID 1 may not reap orphans).
func gone(pid int) bool {
	st, err := StateOf(pid)
	return err != nil || st == 'Z' || st == 'X'
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			st, _ := StateOf(pid)
			t.Fatalf("pid %d still alive after %v (state %c)", pid, within, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func cmdlineOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func startHelper(t *testing.T, mode string) (parent *Process, childPid int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	parent, err = StartProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading child pid from helper: %v", err)
	}
	childPid, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(childPid, syscall.SIGKILL) })
	waitCmdline(t, childPid, "sleep 60", 5*time.Second)
	return parent, childPid
}

// waitCmdline waits until pid's command line starts with want. exec.Cmd.Start returns once the
// child's execve has closed its close-on-exec descriptors, but the kernel fills in the new
// command line a little later: a read right away can see "" (more often on a cold, busy machine).
func waitCmdline(t *testing.T, pid int, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c := cmdlineOf(pid)
		if strings.HasPrefix(c, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is %q after %v, want %s", pid, c, within, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestChildDiesWhenParentIsSIGKILLed(t *testing.T) {
	parent, child := startHelper(t, "parent")
	if gone(child) {
		t.Fatal("child not running")
	}
	if err := syscall.Kill(parent.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitGone(t, child, 5*time.Second)
}

// The fork happens on Start's own locked thread, so the death of the caller's thread does not
// fire the parent-death signal; only the death of the process does.
func TestChildSurvivesCallerThreadExit(t *testing.T) {
	parent, child := startHelper(t, "parent-thread-exit")
	time.Sleep(300 * time.Millisecond)
	if gone(child) {
		t.Fatal("child died when the thread that called Start exited")
	}
	_ = syscall.Kill(parent.Pid(), syscall.SIGKILL)
	_ = parent.Wait()
	waitGone(t, child, 5*time.Second)
}

func TestStopContKillWait(t *testing.T) {
	p, err := StartProcess(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitStopped(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := p.State()
		if err != nil {
			t.Fatal(err)
		}
		if st != 'T' {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !isLive(p) {
		t.Fatal("process not in the registry")
	}

	// Several waiters get the same result.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = p.Wait() })
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, e := range errs {
		var ee *exec.ExitError
		if !errors.As(e, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("Wait = %v, want killed by SIGKILL", e)
		}
		if e != errs[0] {
			t.Fatalf("waiters got different results: %v vs %v", e, errs[0])
		}
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed")
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if err := p.Stop(); !errors.Is(err, ErrExited) {
		t.Fatalf("Stop after exit = %v, want ErrExited", err)
	}
	if isLive(p) {
		t.Fatal("exited process still in the registry")
	}
	if !gone(p.Pid()) {
		t.Fatal("pid still present after Wait")
	}
}

func isLive(p *Process) bool {
	for _, q := range Live() {
		if q == p {
			return true
		}
	}
	return false
}

func TestWaitStoppedAfterSelfStop(t *testing.T) {
	p, err := StartProcess(exec.Command("sh", "-c", "kill -STOP $$; exit 7"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitStopped(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("Wait = %v, want exit status 7", err)
	}
}

func TestWaitStoppedFailsWhenProcessExits(t *testing.T) {
	p, err := StartProcess(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitStopped(ctx); !errors.Is(err, ErrExited) {
		t.Fatalf("WaitStopped = %v, want ErrExited", err)
	}
}

func TestKillTakesTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, _ := cmd.StdoutPipe()
	p, err := StartProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if gone(child) {
		t.Fatal("grandchild not running")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	waitGone(t, child, 5*time.Second)
}

// When the leader exits by itself, what it left behind in its group is killed too.
func TestLeftoversKilledWhenLeaderExits(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null & echo $!")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	p, err := StartProcess(cmd)
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if err := p.Wait(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	waitGone(t, child, 5*time.Second)
}

func TestKillAll(t *testing.T) {
	var ps []*Process
	for range 3 {
		p, err := StartProcess(exec.Command("sleep", "60"))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := KillAll(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		select {
		case <-p.Exited():
		default:
			t.Fatalf("pid %d not exited after KillAll", p.Pid())
		}
	}
}
