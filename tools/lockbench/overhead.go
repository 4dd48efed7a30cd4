package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services/redis"
	"github.com/lockcheck/lockcheck/workloads"
)

const (
	overheadLock = "set-nx-px"
	warmUp       = 300 * time.Millisecond
	// commandsPerCycle: SET NX PX, INCR (token), the read script, the write script, the
	// compare-and-delete script.
	commandsPerCycle = 5
)

// harnessOverhead is figure 2: the same loop (set-nx-px; acquire, read every register, write
// every register +1, release; hold 0, think 0; one client) three ways, side by side in each round:
//   - plain: in this process, straight to the servers;
//   - worker: a real `lockbench worker` process, its events streamed to us as JSON lines and
//     appended to a history file, straight to the servers;
//   - full run: runner.Run of a generated no-fault scenario: worker, proxies, nemesis, judging.
func harnessOverhead(ctx context.Context, c config) (string, error) {
	exe, err := self()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "lockbench-overhead-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	prov, err := local.New(providers.Options{Dir: tmp})
	if err != nil {
		return "", err
	}
	defer prov.Close()
	lockNode, err := redis.StartServer(ctx, prov, "n1", true)
	if err != nil {
		return "", err
	}
	resNode, err := redis.StartServer(ctx, prov, "resource", false)
	if err != nil {
		return "", err
	}
	lockAddr, resAddr := lockNode.Addr(redis.ClientPort), resNode.Addr(redis.ClientPort)

	var plain, worker, full []float64
	for round := 1; round <= c.overheadRuns && ctx.Err() == nil; round++ {
		key := fmt.Sprintf("bench:overhead:%d", round)
		p, err := plainLoop(lockAddr, resAddr, key+":plain", c.overheadFor)
		if err != nil {
			return "", fmt.Errorf("plain loop: %w", err)
		}
		w, err := workerLoop(exe, lockAddr, resAddr, key+":worker", filepath.Join(tmp, fmt.Sprintf("history-%d.jsonl", round)), c.overheadFor)
		if err != nil {
			return "", fmt.Errorf("worker loop: %w", err)
		}
		f, err := fullRun(ctx, exe, filepath.Join(tmp, "runs"), c.overheadFor)
		if err != nil {
			return "", fmt.Errorf("full run: %w", err)
		}
		plain, worker, full = append(plain, p), append(worker, w), append(full, f)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "## 2. Harness overhead\n\n")
	fmt.Fprintf(&b, "Command: `lockbench` (tools/lockbench/overhead.go), n = %d rounds of %s each way, the three ways side by side in "+
		"each round.\n\n", len(plain), c.overheadFor)
	fmt.Fprintf(&b, "The same loop three ways: `%s`, one client, hold 0, think 0; each cycle is acquire, read every register, "+
		"write every register + 1, release (what a worker's critical section does), against one Redis lock node and the resource.\n\n", overheadLock)
	b.WriteString("| way | cycles/s | vs plain |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| plain Go loop in one process, direct connections | %s | 1× |\n", spreadOf(plain).format(num))
	fmt.Fprintf(&b, "| worker process (`lockcheck worker`; here `lockbench worker`, the same code), events as JSON lines to the controller and "+
		"into history.jsonl, direct connections | %s | %s |\n",
		spreadOf(worker).format(num), spreadOf(ratios(worker, plain)).format(ratio))
	fmt.Fprintf(&b, "| full `runner.Run` of a no-fault scenario (worker behind toxiproxy proxies, then judged); acquisitions ÷ duration | %s | %s |\n",
		spreadOf(full).format(num), spreadOf(ratios(full, plain)).format(ratio))
	var extra []float64 // µs added per cycle, round by round
	for i := range plain {
		if plain[i] > 0 && worker[i] > 0 {
			extra = append(extra, 1e6/worker[i]-1e6/plain[i])
		}
	}
	var proxied []float64 // µs the full run adds per command, round by round
	for i := range worker {
		if worker[i] > 0 && full[i] > 0 {
			proxied = append(proxied, (1e6/full[i]-1e6/worker[i])/commandsPerCycle)
		}
	}
	fmt.Fprintf(&b, "\nThe worker adds %s µs per cycle; the full run adds %s µs more per command (%d commands per cycle).\n",
		spreadOf(extra).format(num), spreadOf(proxied).format(num), commandsPerCycle)
	b.WriteString("\nWhere the difference goes. The worker records 8 events per cycle (invoke and completion of acquire, " +
		"read, write and release). Each is marshalled to JSON and written to the controller's pipe at once, unbuffered, " +
		"so a SIGKILL never loses an event of something that already happened; the controller wakes for each line, " +
		"parses it and appends it to history.jsonl (one more write). The full run sends every command through a " +
		"toxiproxy proxy running in the controller, so that a scenario can cut or delay that one link: each request " +
		"and reply is copied through user space twice more and needs the controller's goroutines to be scheduled, on " +
		"2 cores shared with the worker and the two redis-servers. That hop, not the recording, is most of the cost. " +
		"A cycle here does no work (hold 0, think 0), so this is the worst case: with the shipped scenarios' holds of " +
		"20–100 ms and think time of 10 ms the same cost is a few percent of a cycle. None of it changes what the " +
		"lock does.\n")
	return b.String(), nil
}

// plainLoop runs the cycle in this process for d after a warm-up and returns cycles per second.
func plainLoop(lockAddr, resAddr, key string, d time.Duration) (float64, error) {
	design, err := locks.Get(overheadLock)
	if err != nil {
		return 0, err
	}
	l, err := design.New(locks.Env{Client: "client-1", Nodes: []string{lockAddr}, Key: key, TTL: 10 * time.Second,
		Timeout: time.Second, Point: func(string) {}})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	store := resource.Dial(resAddr, time.Second)
	defer store.Close()
	var cs int64
	cycle := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		token, err := l.Acquire(ctx)
		if err != nil {
			return err
		}
		cs++
		a := resource.Access{Client: "client-1", CS: cs, Token: token, Value: locks.ValueOf(l)}
		read, err := store.Read(ctx, a, a.Usable())
		if err != nil {
			return err
		}
		values := map[string]int64{}
		for name, r := range read {
			if r.Status == history.Accepted {
				values[name] = r.Value + 1
			}
		}
		if _, err := store.Write(ctx, a, values); err != nil {
			return err
		}
		return l.Release(ctx)
	}
	for end := time.Now().Add(warmUp); time.Now().Before(end); {
		if err := cycle(); err != nil {
			return 0, err
		}
	}
	n, start := 0, time.Now()
	for time.Since(start) < d {
		if err := cycle(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// workerLoop runs the cycle in a worker process, recording its events to historyPath as the
// runner does, and returns the releases per second it reported in a window of d after a warm-up.
func workerLoop(exe, lockAddr, resAddr, key, historyPath string, d time.Duration) (float64, error) {
	hw, err := history.Create(historyPath)
	if err != nil {
		return 0, err
	}
	cfg := workloads.Config{
		Client: "client-1", Lock: overheadLock, Endpoints: locks.Endpoints{Nodes: []string{lockAddr}}, Resource: resAddr, Key: key,
		TTL: 10 * time.Second, Seed: 1,
		Workload: workloads.Workload{AcquireTimeout: yamltime.Duration(2 * time.Second), BackoffMin: yamltime.Duration(5 * time.Millisecond),
			BackoffMax: yamltime.Duration(20 * time.Millisecond), Timeout: yamltime.Duration(time.Second)},
	}
	w, err := workloads.Spawn([]string{exe, "worker"}, os.Environ(), cfg, io.Discard)
	if err != nil {
		hw.Close()
		return 0, err
	}
	started := history.Now()
	var releases []int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.Events {
			hw.Append(e)
			if e.F == history.Release && e.Type == history.OK {
				releases = append(releases, e.Time)
			}
		}
	}()
	time.Sleep(warmUp + d + 100*time.Millisecond)
	_ = w.Finish()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = w.Process().Kill()
		<-done
	}
	_ = w.Process().Wait()
	if err := hw.Close(); err != nil {
		return 0, err
	}
	from, to := started+int64(warmUp), started+int64(warmUp+d)
	n := 0
	for _, t := range releases {
		if t >= from && t < to {
			n++
		}
	}
	if n == 0 {
		return 0, errors.New("the worker released the lock no time in the window (see its log: rerun with --keep)")
	}
	return float64(n) / d.Seconds(), nil
}

// fullRun runs a generated no-fault scenario end to end and returns acquisitions per second of
// its duration.
func fullRun(ctx context.Context, exe, resultsDir string, d time.Duration) (float64, error) {
	sc, err := scenarios.New(scenarios.Scenario{
		Name:        "bench-harness-overhead",
		Description: "lockbench figure 2, one client looping with no hold and no think time",
		LockSpec:    scenarios.LockSpec{Name: overheadLock}, Clients: 1, Seed: 1,
		TTL: scenarios.Duration(10 * time.Second), Duration: scenarios.Duration(d),
		Workload: scenarios.Workload{Timeout: scenarios.Duration(time.Second)},
		Expect:   checker.Expect{MutualExclusion: "holds"},
	})
	if err != nil {
		return 0, err
	}
	res, err := runner.Run(ctx, sc, runner.Options{ResultsDir: resultsDir, Worker: []string{exe, "worker"}})
	if err != nil {
		return 0, err
	}
	if !res.Matches {
		return 0, fmt.Errorf("the no-fault run did not hold: %s (%s)", res.Verdict.Summary, res.Dir)
	}
	return float64(res.Verdict.Liveness.Acquisitions) / d.Seconds(), nil
}
