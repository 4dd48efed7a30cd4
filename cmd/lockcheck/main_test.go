package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history/synth"
)

// lockcheck builds the real binary once per test run: these tests drive it as a user would.
func lockcheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockcheck")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// quickstartLockcheck builds make run's binary, the quick-start build (-tags quickstart).
func quickstartLockcheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockcheck")
	if out, err := exec.Command("go", "build", "-tags", "quickstart", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags quickstart: %v\n%s", err, out)
	}
	return bin
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestCommandLine(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")

	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}

	t.Run("list shows every design with its token", func(t *testing.T) {
		out, code := run("list", "-v")
		if code != 0 || !strings.Contains(out, "set-nx-px") || !strings.Contains(out, "setnx-del") || !strings.Contains(out, "INCR") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		// Whether the workload blocks or polls, per design.
		for _, want := range []string{"WAITS", "waits: blocks: on the lock's unlock channel", "waits: polls (try-lock"} {
			if !strings.Contains(out, want) {
				t.Errorf("list -v lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("a bad scenario is a harness error naming file, line and field", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(bad, []byte("name: bad\nlock: redlok\nclients: 2\nduration: 1s\n"), 0o644)
		out, code := run("run", bad)
		if code != exitHarness || !strings.Contains(out, "bad.yaml:2: lock:") || !strings.Contains(out, "set-nx-px") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("a verdict that differs from expect exits 1 and says what differs", func(t *testing.T) {
		src, _ := os.ReadFile(filepath.Join(repo, "scenarios/no-faults-setnx-del.yaml"))
		wrong := strings.Replace(strings.Replace(string(src), "mutual_exclusion: holds", "mutual_exclusion: "+
			"violated", 1), "duration: 4s", "duration: 1s", 1)
		path := filepath.Join(t.TempDir(), "no-faults-setnx-del.yaml")
		os.WriteFile(path, []byte(wrong), 0o644)
		out, code := run("run", "--results", t.TempDir(), path)
		if code != exitMismatch || !strings.Contains(out, "mutual_exclusion: expected violated, got holds") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("check judges a folder with only a history, without expectations", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := synth.WriteRun(dir, synth.Options{Events: 2000}); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "scenario.yaml"))
		out, code := run("check", dir)
		if code != exitMatch || !strings.Contains(out, "no scenario.yaml") || !strings.Contains(out, "mutual exclusion held") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		for _, f := range []string{"verdict.json", "report.html"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("check did not write %s: %v", f, err)
			}
		}
	})

	t.Run("check refuses a malformed history naming file, line and field", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := synth.WriteRun(dir, synth.Options{Events: 200}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "history.jsonl")
		raw, _ := os.ReadFile(path)
		lines := strings.SplitAfter(string(raw), "\n")
		lines[6] = strings.Replace(lines[6], `"op":`, `"op":"x","was":`, 1)
		os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
		out, code := run("check", dir)
		if code != exitHarness || !strings.Contains(out, path+`:7: field "op": want an integer, got a string`) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("check fails a run that proves nothing", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := synth.WriteRun(dir, synth.Options{Events: 200}); err != nil {
			t.Fatal(err)
		}
		// Keep only the controller's notes and the acquire invokes: nobody ever got the lock.
		path := filepath.Join(dir, "history.jsonl")
		raw, _ := os.ReadFile(path)
		var kept []string
		for _, line := range strings.SplitAfter(string(raw), "\n") {
			if strings.Contains(line, `"process":"controller"`) || strings.Contains(line, `"type":"invoke","f":"acquire","op":1}`) {
				kept = append(kept, line)
			}
		}
		os.WriteFile(path, []byte(strings.Join(kept, "")), 0o644)
		out, code := run("check", dir)
		if code != exitMismatch || !strings.Contains(out, "inconclusive: expected a run that proves something, got no client ever acquired the lock") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("the baseline gate refuses what it cannot use before running anything", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"matrix", "--baseline", filepath.Join(t.TempDir(), "nothing")}, "--baseline: "},
			{[]string{"matrix", "--baseline-lock", "redlok"}, "--baseline-lock: unknown lock \"redlok\"; valid locks:"},
			{[]string{"matrix", "--baseline", "x", "--baseline-lock", "redlock"}, "--baseline and --baseline-lock: give one"},
		} {
			out, code := run(c.args...)
			if code != exitHarness || !strings.Contains(out, c.want) {
				t.Errorf("%v: exit %d, want %d saying %q:\n%s", c.args, code, exitHarness, c.want, out)
			}
		}
	})

	t.Run("an unknown run folder is a harness error", func(t *testing.T) {
		out, code := run("check", filepath.Join(t.TempDir(), "nothing"))
		if code != exitHarness {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

// SIGINT in the middle of a run: the controller heals, stops its clients and servers, keeps the
// history, and exits 2; nothing it started is left running, and `check` can judge the history.
func TestInterruptLeavesNoProcessAndACheckableHistory(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	results := t.TempDir()
	cmd := exec.Command(bin, "run", "--results", results, "scenarios/debate/k2-set-nx-px.yaml")
	cmd.Dir = repo
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Interrupt while client-1 is paused and the others work (the pause starts right away).
	time.Sleep(1200 * time.Millisecond)
	children := descendants(cmd.Process.Pid)
	if len(children) < 5 { // 2 redis-servers and 4 workers
		t.Fatalf("expected servers and workers running under the controller, found %v", children)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != exitHarness {
			t.Fatalf("exit %d after SIGINT, want %d:\n%s", code, exitHarness, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("controller did not exit after SIGINT:\n%s", out.String())
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("process %d (%s) outlived the interrupted controller", pid, cmdline(pid))
		}
	}

	runDir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		t.Fatalf("no run folder: %v\n%s", err, out.String())
	}
	check := exec.Command(bin, "check", runDir)
	checkOut, err := check.CombinedOutput()
	if code := exitCode(err); code == exitHarness || code < 0 {
		t.Fatalf("check of an interrupted run failed (exit %d):\n%s", code, checkOut)
	}
	if !strings.Contains(string(checkOut), "mutual exclusion") {
		t.Fatalf("check printed no verdict:\n%s", checkOut)
	}
	if _, err := os.Stat(filepath.Join(runDir, "verdict.json")); err != nil {
		t.Fatal(err)
	}
}

// descendants lists every process whose parent chain leads to pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// A soak: --duration runs a scenario longer than its file says, shows its progress while it
// runs, and Ctrl-C halfway still leaves a history that `check` judges.
func TestASoakRunsForItsDurationAndAnInterruptLeavesACheckableHistory(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	results := t.TempDir()
	cmd := exec.Command(bin, "run", "--duration", "10m", "--results", results, "scenarios/no-faults-set-nx-px.yaml")
	cmd.Dir = repo
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(7 * time.Second) // past the 4s the scenario's file asks for
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != exitHarness {
			t.Fatalf("exit %d after SIGINT, want %d:\n%s", code, exitHarness, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("controller did not exit after SIGINT:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "progress: ") || !strings.Contains(out.String(), "/10m0s") {
		t.Errorf("no progress shown against the soak's length:\n%s", out.String())
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		t.Fatalf("no run folder: %v\n%s", err, out.String())
	}
	raw, _ := os.ReadFile(filepath.Join(runDir, "verdict.json"))
	var v struct {
		Verdict struct {
			RunLength time.Duration `json:"run_length_ns"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Verdict.RunLength < 5*time.Second {
		t.Fatalf("the run stopped at %s, before the interrupt at 7s (%v)", v.Verdict.RunLength, err)
	}
	sc, _ := os.ReadFile(filepath.Join(runDir, "scenario.yaml"))
	if !strings.Contains(string(sc), "duration: 10m0s") {
		t.Errorf("the run folder's scenario does not say what ran:\n%s", sc)
	}
	check := exec.Command(bin, "check", runDir)
	checked, err := check.CombinedOutput()
	if code := exitCode(err); code == exitHarness || !strings.Contains(string(checked), "mutual exclusion") {
		t.Fatalf("check of the interrupted soak: exit %d\n%s", code, checked)
	}
}
