package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/providers/docker/images"
)

// timeToVerdict is figure 11: how long a new user waits. make run's parts as on a fresh clone
// (the binary's modules into an empty module cache, the build with an empty build cache, the
// scenario; the Debian packages it would install are named, not timed, since this machine has
// them); the docker provider's images built from scratch; a part of the matrix at --parallel 1
// and 2, cell by cell.
func timeToVerdict(ctx context.Context, c config) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## 11. %s\n\n", titles[11])
	tmp, err := os.MkdirTemp("", "lockbench-verdict-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "lockcheck")
	var errs []error

	b.WriteString("`make run` from a fresh clone, part by part (n = 1 each; the load average beside each):\n\n" +
		"| part | command | wall time | load before |\n| --- | --- | --- | --- |\n")
	apt, _ := exec.CommandContext(ctx, "./scripts/install-deps.sh", "--dry-run", "redis").CombinedOutput()
	missing := strings.TrimSpace(string(apt))
	if missing == "" {
		missing = "nothing missing on this machine"
	}
	fmt.Fprintf(&b, "| Debian packages | `scripts/install-deps.sh redis` | not timed here (%s) | |\n", missing)
	env := append(os.Environ(), "GOMODCACHE="+filepath.Join(tmp, "mod"), "GOCACHE="+filepath.Join(tmp, "cache"), "GOFLAGS=-modcacherw")
	steps := []struct{ part, cmd string }{
		{"Go modules the binary imports (empty module cache)", "go list -tags quickstart -deps ./cmd/lockcheck"},
		{"build of the quick-start binary (empty build cache)", "go build -tags quickstart -o " + bin + " ./cmd/lockcheck"},
		{"the scenario", bin + " run --results " + filepath.Join(c.results, "verdict") + " scenarios/debate/k2-set-nx-px.yaml"},
	}
	var total time.Duration
	for _, s := range steps {
		load := loadavg()
		args := strings.Fields(s.cmd)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = env
		t := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t)
		total += took
		status := took.Round(100 * time.Millisecond).String()
		if err != nil { // the scenario's verdict matches its expect block: exit 0
			status += " (failed: " + err.Error() + ")"
			errs = append(errs, fmt.Errorf("%s: %v\n%s", s.cmd, err, tail(string(out), 1500)))
		}
		display := strings.ReplaceAll(strings.ReplaceAll(s.cmd, tmp, "$TMP"), c.results, "$RESULTS")
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", s.part, display, status, load)
	}
	fmt.Fprintf(&b, "| **all but the Debian packages** | | **%s** | |\n\n", total.Round(time.Second))

	if !c.verdictImages {
		b.WriteString("Image build: left out of this run (`--quick` or `--verdict-images=false`).\n\n")
	} else if text, err := imageBuild(ctx); err != nil {
		b.WriteString(text + fmt.Sprintf("Image build failed: %v\n\n", err))
		if !errors.Is(err, images.ErrNoDocker) && !strings.Contains(err.Error(), "root") {
			errs = append(errs, err)
		}
	} else {
		b.WriteString(text)
	}

	if !c.verdictMatrix {
		b.WriteString("Matrix serial versus parallel: left out of this run (`--quick` or `--verdict-matrix=false`).\n")
	} else if _, err := os.Stat(bin); err == nil {
		text, err := matrixSerialVersusParallel(ctx, c, bin)
		b.WriteString(text)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return b.String(), errors.Join(errs...)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// imageBuild builds every image from scratch under salted tags (the images the provider runs are
// not touched), times each, and removes them.
func imageBuild(ctx context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("The docker provider's images built from scratch (`lockcheck images` on a machine that has none: the base " +
		"by debootstrap, the shared servers layer in one apt step, then each server type's image), under throwaway tags, " +
		"removed after:\n\n")
	cli, err := images.Connect(ctx)
	if err != nil {
		return b.String(), err
	}
	defer cli.Close()
	bld := images.NewBuilder(cli)
	bld.Salt = fmt.Sprintf("lockbench %d", time.Now().UnixNano())
	load := loadavg()
	t := time.Now()
	built, err := bld.EnsureAll(ctx)
	wall := time.Since(t)
	var refs []string
	b.WriteString("| image | built in |\n| --- | --- |\n")
	for _, img := range built {
		refs = append(refs, img.Ref)
		if img.Built {
			name, _, _ := strings.Cut(strings.TrimPrefix(img.Ref, images.Repository), ":")
			fmt.Fprintf(&b, "| %s | %s |\n", name, img.Took.Round(100*time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "| **all** | **%s** (load before: %s) |\n\n", wall.Round(time.Second), load)
	// Children first: each server image, then the layer, then the base.
	for i, j := 0, len(refs)-1; i < j; i, j = i+1, j-1 {
		refs[i], refs[j] = refs[j], refs[i]
	}
	if rerr := bld.Remove(context.WithoutCancel(ctx), refs...); rerr != nil && err == nil {
		err = rerr
	}
	return b.String(), err
}

// matrixSubset is the part of the default grid figure 11 runs twice: a design of each server
// kind and node count, under no fault, a pause and a killed holder.
var matrixSubset = struct{ locks, faults string }{"set-nx-px,redlock,zk,etcd,pg-advisory", "none,pause-after-acquire,kill-holder"}

// matrixSerialVersusParallel runs matrixSubset at --parallel 1, then at 2, and compares the cells.
func matrixSerialVersusParallel(ctx context.Context, c config, bin string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "`lockcheck matrix --locks %s --faults %s` at `--parallel 1`, then at `--parallel 2` (the default), n = 1 each:\n\n",
		matrixSubset.locks, matrixSubset.faults)
	b.WriteString("| --parallel | wall time | load before |\n| --- | --- | --- |\n")
	grids := map[int]*matrix.Matrix{}
	for _, p := range []int{1, 2} {
		results := filepath.Join(c.results, fmt.Sprintf("matrix-parallel-%d", p))
		load := loadavg()
		cmd := exec.CommandContext(ctx, bin, "matrix", "--locks", matrixSubset.locks, "--faults", matrixSubset.faults,
			"--parallel", fmt.Sprint(p), "--results", results)
		t := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t)
		if err != nil && exitCode(err) != 1 {
			return b.String(), fmt.Errorf("matrix --parallel %d: %v\n%s", p, err, tail(string(out), 1500))
		}
		m, err := latestMatrix(results)
		if err != nil {
			return b.String(), err
		}
		grids[p] = m
		fmt.Fprintf(&b, "| %d | %s | %s |\n", p, took.Round(time.Second), load)
	}
	var differ []string
	for _, cell := range grids[1].Cells {
		other, ok := grids[2].Cell(cell.Lock, cell.Fault)
		if !ok || other.Status != cell.Status {
			differ = append(differ, fmt.Sprintf("%s × %s: %s serial, %s parallel", cell.Lock, cell.Fault, cell.Status, other.Status))
		}
	}
	if len(differ) == 0 {
		fmt.Fprintf(&b, "\nEvery one of the %d cells has the same status both ways.\n", len(grids[1].Cells))
	} else {
		fmt.Fprintf(&b, "\nCells whose status differs (one run each: compare with two serial runs before calling it a "+
			"difference): %s.\n", strings.Join(differ, "; "))
	}
	return b.String(), nil
}
