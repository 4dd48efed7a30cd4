package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// soakFigures is what figure 8 measured, kept in results/soak.json so that `make bench` can show
// the last soak without spending half an hour on it every time.
type soakFigures struct {
	When       time.Time     `json:"when"`
	Scenario   string        `json:"scenario"`
	Duration   time.Duration `json:"duration_ns"`
	Exit       int           `json:"exit"`
	Events     int           `json:"events"`
	History    int64         `json:"history_bytes"`
	RunWall    time.Duration `json:"run_wall_ns"`
	PeakRSS    int64         `json:"controller_peak_rss_bytes"`
	RSSSamples []rssSample   `json:"controller_rss"`
	JudgeWall  time.Duration `json:"judge_wall_ns"`
	JudgeRSS   int64         `json:"judge_peak_rss_bytes"`
	Report     int64         `json:"report_bytes"`
	Verdict    string        `json:"verdict"`
	Load       string        `json:"load"`
}

type rssSample struct {
	At  time.Duration `json:"at_ns"`
	RSS int64         `json:"rss_bytes"`
}

// soakScenario is the scenario figure 8 soaks: random-mixed-redlock's seeded random package of
// every fault kind but kill. A killed client is not started again, so with kills in the mix every
// client would be dead within the first minute and the rest of the soak would test nothing.
const soakScenario = "random-mixed-redlock"

// soak is figure 8: `lockcheck run --duration D` of a random-mixed scenario, the controller's
// resident memory sampled from /proc as it runs, then `lockcheck check` of its folder timed.
// With --soak 0 it shows the figures the last soak stored.
func soak(ctx context.Context, c config) (string, error) {
	stored := filepath.Join(filepath.Dir(c.out), "soak.json")
	if c.soakFor <= 0 {
		raw, err := os.ReadFile(stored)
		if err != nil {
			return "## 8. Soak\n\nNot measured in this run, and no earlier soak stored: `make soak` (30 minutes) measures it.\n", nil
		}
		var f soakFigures
		if err := json.Unmarshal(raw, &f); err != nil {
			return "", fmt.Errorf("%s: %w", stored, err)
		}
		return soakText(f, fmt.Sprintf("Stored by `make soak` on %s (%s); not measured again in this run.", f.When.Format("2006-01-02 "+
			"15:04 MST"), stored)), nil
	}
	tmp, err := os.MkdirTemp("", "lockbench-soak-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "lockcheck")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/lockcheck").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/lockcheck: %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(c.scenarioDir, soakScenario+".yaml"))
	if err != nil {
		return "", err
	}
	text := strings.Replace(string(src), "faults: [pause, kill, clock, crash, partition, delay]", "faults: [pause, clock, crash, partition, delay]", 1)
	if text == string(src) {
		return "", fmt.Errorf("%s: its random package is not the one figure 8 expects (pause, kill, clock, crash, partition, delay)", soakScenario)
	}
	scenario := filepath.Join(tmp, soakScenario+".yaml")
	if err := os.WriteFile(scenario, []byte(text), 0o644); err != nil {
		return "", err
	}
	results := filepath.Join(c.results, "soak") // kept with --keep: a soak may find something worth reading
	fmt.Fprintf(os.Stderr, "lockbench: the soak's run folder goes under %s (kept with --keep)\n", results)
	f := soakFigures{When: time.Now(), Scenario: soakScenario + " without kill", Duration: c.soakFor, Load: loadavg()}
	fmt.Fprintf(os.Stderr, "lockbench: soaking %s for %s (started %s)\n", soakScenario, c.soakFor, f.When.Format("15:04:05"))
	cmd := exec.Command(bin, "run", "--duration", c.soakFor.String(), "--results", results, scenario)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr // progress lines go to our stderr as they come
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the controller's RSS every 10 s, and its peak (VmHWM) at the last sample
		defer close(sampled)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			rss, hwm := procMemory(cmd.Process.Pid)
			if rss > 0 {
				f.RSSSamples = append(f.RSSSamples, rssSample{At: time.Since(began), RSS: rss})
				f.PeakRSS = max(f.PeakRSS, hwm)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err = <-waitErr:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGINT) // an orderly stop: the history is judged
		err = <-waitErr
	}
	f.RunWall = time.Since(began)
	close(stop)
	<-sampled
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		f.Exit = ee.ExitCode()
	case err != nil:
		return "", err
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		f.PeakRSS = max(f.PeakRSS, ru.Maxrss*1024) // the judging at the end, after the last sample
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		return "", fmt.Errorf("the soak left no run folder (exit %d): %v\n%s", f.Exit, err, tail(out.String(), 2000))
	}
	f.History = fileSize(filepath.Join(dir, "history.jsonl"))
	f.Events, _ = countLines(filepath.Join(dir, "history.jsonl"))
	wall, rss, _, code, checkOut := timeCommand(bin, "check", dir)
	if code == 2 {
		return "", fmt.Errorf("lockcheck check of the soak: %s", tail(checkOut, 2000))
	}
	f.JudgeWall, f.JudgeRSS = wall, rss
	f.Report = fileSize(filepath.Join(dir, "report.html"))
	for _, line := range strings.Split(checkOut, "\n") {
		if strings.Contains(line, "verdict") || strings.Contains(line, "expectations") {
			f.Verdict = strings.TrimSpace(line)
			break
		}
	}
	if raw, err := json.MarshalIndent(f, "", "  "); err == nil {
		_ = os.WriteFile(stored, append(raw, '\n'), 0o644)
	}
	return soakText(f, fmt.Sprintf("Measured in this run, started %s; stored in %s for later `make bench` runs.", f.When.Format("2006-01-02 "+
		"15:04 MST"), stored)), nil
}

func soakText(f soakFigures, when string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## 8. Soak\n\n%s Command: `lockcheck run --duration %s` of %s (its seeded random package of pauses, "+
		"clock steps, node crash-restarts, partitions and delays every 700 ms on average; kill is left out because a killed client "+
		"is not started again), then `lockcheck check` of its run folder. The controller's memory is its resident set (VmRSS from "+
		"/proc) sampled every 10 s, and its peak (VmHWM, and getrusage at exit: the judging at the end included). "+
		"Load average at the start: %s.\n\n", when, f.Duration, f.Scenario, f.Load)
	b.WriteString("| events | history.jsonl | run (wall) | controller peak RSS | controller RSS over the run | `check` wall time | `check` " +
		"peak RSS | report.html | exit |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var samples []string
	if n := len(f.RSSSamples); n > 0 {
		for _, frac := range []float64{0.05, 0.25, 0.5, 0.75, 1} {
			s := f.RSSSamples[min(n-1, int(frac*float64(n-1)))]
			samples = append(samples, fmt.Sprintf("%s at %s", mb(float64(s.RSS)/(1<<20)), s.At.Round(time.Second)))
		}
	}
	fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", f.Events, mb(float64(f.History)/(1<<20)),
		f.RunWall.Round(time.Second), mb(float64(f.PeakRSS)/(1<<20)), strings.Join(samples, ", "),
		secs(f.JudgeWall.Seconds()), mb(float64(f.JudgeRSS)/(1<<20)), mb(float64(f.Report)/(1<<20)), f.Exit)
	if f.Verdict != "" {
		fmt.Fprintf(&b, "\n`check` said: %s\n", f.Verdict)
	}
	return b.String()
}

// procMemory reads a process's VmRSS and VmHWM (bytes) from /proc; zeros once it is gone.
func procMemory(pid int) (rss, hwm int64) {
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = kb * 1024
		case "VmHWM":
			hwm = kb * 1024
		}
	}
	return rss, hwm
}

func countLines(path string) (int, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	n := 0
	buf := make([]byte, 1<<20)
	for {
		k, err := file.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err != nil {
			return n, nil
		}
	}
}
