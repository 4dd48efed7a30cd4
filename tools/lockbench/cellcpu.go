package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/matrix"
)

// cellFamilies are the matrix rows whose CPU per cell figure 12 measures, by what a cell of them
// starts: servers without a JVM and clients through the worker, and ZooKeeper's JVMs (servers,
// and Curator's clients).
var cellFamilies = []struct{ name, locks string }{
	{"Redis, etcd, PostgreSQL", "set-nx-px,redlock,etcd,pg-advisory,redisson"},
	{"ZooKeeper, Curator", "zk,curator,curator-rw,kazoo"},
}

// cellFaults are figure 12's columns: none of them acts on a link.
const cellFaults = "none,pause-after-acquire,kill-holder"

// cellCPU is figure 12: the CPU a matrix cell costs (lockcheck and every process it started and
// reaped, user + system), by family, as a ratio to a plain run of the baseline scenario measured
// in the same call: the figure docs/MATRIX.md's CPU cuts are about.
func cellCPU(ctx context.Context, c config) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## 12. %s\n\n", titles[12])
	bin, err := self()
	if err != nil {
		return "", err
	}
	lockcheck := filepath.Join(filepath.Dir(bin), "lockcheck")
	if _, err := os.Stat(lockcheck); err != nil {
		return "", fmt.Errorf("figure 12 runs bin/lockcheck, built beside lockbench (make build): %w", err)
	}
	const baseline = "scenarios/no-faults-set-nx-px.yaml"
	base, _, err := cpuOf(ctx, lockcheck, "run", "--results", filepath.Join(c.results, "cellcpu-baseline"), baseline)
	if err != nil {
		return b.String(), err
	}
	fmt.Fprintf(&b, "`lockcheck matrix --locks ROWS --faults %s --parallel 2`, n = 1 each; CPU is user + system of lockcheck and "+
		"everything it started and reaped; the baseline, `lockcheck run %s` in the same call: %.1f CPU-s.\n\n",
		cellFaults, baseline, base.Seconds())
	b.WriteString("| family | rows | cells | CPU-s | CPU-s per cell | per cell ÷ baseline | wall | CPU-s with `--warm=false` | kept ÷ fresh |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range cellFamilies {
		results := filepath.Join(c.results, "cellcpu-"+strings.ReplaceAll(f.locks, ",", "-"))
		args := []string{"matrix", "--locks", f.locks, "--faults", cellFaults, "--parallel", "2"}
		cpu, wall, err := cpuOf(ctx, lockcheck, append(args, "--results", results)...)
		if err != nil {
			return b.String(), err
		}
		m, err := latestMatrix(results)
		if err != nil {
			return b.String(), err
		}
		// The same cells with every cell's servers started afresh: what keeping them saves.
		fresh, _, err := cpuOf(ctx, lockcheck, append(args, "--warm=false", "--results", results+"-fresh")...)
		if err != nil {
			return b.String(), err
		}
		n := max(1, len(m.Cells))
		per := cpu / time.Duration(n)
		fmt.Fprintf(&b, "| %s | `%s` | %d | %.1f | %.2f | %.2f | %s | %.1f | %.2f |\n", f.name, f.locks, len(m.Cells), cpu.Seconds(),
			per.Seconds(), per.Seconds()/base.Seconds(), wall.Round(time.Second), fresh.Seconds(), cpu.Seconds()/fresh.Seconds())
	}
	return b.String(), nil
}

// cpuOf runs lockcheck with args and returns the CPU it and its reaped descendants used, and its
// wall time. A run whose verdict misses its expect block (exit 1) still measures.
func cpuOf(ctx context.Context, bin string, args ...string) (cpu, wall time.Duration, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	t := time.Now()
	out, err := cmd.CombinedOutput()
	wall = time.Since(t)
	if err != nil && exitCode(err) != 1 {
		return 0, wall, fmt.Errorf("lockcheck %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 1500))
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), wall, nil
}

// latestMatrix reads the grid the last `lockcheck matrix --results results` wrote.
func latestMatrix(results string) (*matrix.Matrix, error) {
	raw, err := os.ReadFile(filepath.Join(results, "matrix", "latest", matrix.JSONFile))
	if err != nil {
		return nil, err
	}
	var m matrix.Matrix
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
