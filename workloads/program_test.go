package workloads

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// lockcheck starts the lockcheck-worker beside it only when that one was built with the same
// digest of the sources; a worker of other sources, or none, leaves lockcheck its own worker.
func TestTheWorkerBesideLockcheckIsUsedOnlyWhenBuiltFromTheSameSources(t *testing.T) {
	built := t.TempDir()
	build := exec.Command("go", "build", "-ldflags", "-X github.com/lockcheck/lockcheck/workloads.Build=same-sources",
		"-o", filepath.Join(built, WorkerProgramName), "../cmd/lockcheck-worker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build lockcheck-worker: %v\n%s", err, out)
	}
	worker := filepath.Join(built, WorkerProgramName)
	old := Build
	t.Cleanup(func() { Build = old })
	for _, c := range []struct {
		name, build string
		sibling     bool // a worker beside exe
		want        string
	}{
		{"same digest", "same-sources", true, "beside"},
		{"another digest", "other-sources", true, "self"},
		{"no digest (go build)", "", true, "self"},
		{"no worker beside it", "same-sources", false, "self"},
	} {
		dir := t.TempDir()
		exe := filepath.Join(dir, "lockcheck")
		if c.sibling {
			if err := os.Link(worker, filepath.Join(dir, WorkerProgramName)); err != nil {
				t.Fatal(err)
			}
		}
		Build = c.build
		want := []string{exe, "worker"}
		if c.want == "beside" {
			want = []string{filepath.Join(dir, WorkerProgramName), "worker"}
		}
		if got := Program(exe); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", c.name, got, want)
		}
	}
}

// A worker's Go runtime gets one processor, unless the environment it is given chose.
func TestWorkersRunOnOneProcessorUnlessTold(t *testing.T) {
	got := oneProcessor([]string{"HOME=/root"})
	if !slices.Equal(got, []string{"HOME=/root", "GOMAXPROCS=1"}) {
		t.Errorf("oneProcessor = %q, want GOMAXPROCS=1 added", got)
	}
	told := []string{"GOMAXPROCS=4", "HOME=/root"}
	if got := oneProcessor(told); !slices.Equal(got, told) {
		t.Errorf("oneProcessor(%q) = %q, want it unchanged", told, got)
	}
}
