package report_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/workloads"
)

var resultsRoot string

// The test binary doubles as the worker: the runner re-executes it with workloads.TestWorkerEnv set.
func TestMain(m *testing.M) {
	workloads.RunIfTestWorker()
	// LOCKCHECK_TEST_RESULTS keeps the run folders (and the browser's screenshot) in a folder of
	// one's choosing; by default they go to a temporary folder removed when the tests pass.
	dir, keep := os.Getenv("LOCKCHECK_TEST_RESULTS"), true
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "lockcheck-report-test-"); err != nil {
			panic(err)
		}
		keep = false
	}
	resultsRoot = dir
	code := m.Run()
	if code == 0 && !keep {
		os.RemoveAll(dir)
	} else {
		os.Stderr.WriteString("run folders kept in " + dir + "\n")
	}
	os.Exit(code)
}

// realRuns makes, once for every test of the package, two real runs against real Redis in
// resultsRoot: the K2 pause (client-1 frozen past its TTL: double ownership, one lost update),
// then a short control without faults. Each is shortened to keep the tests quick.
var realRuns = sync.OnceValues(func() (*runs, error) {
	pause, err := shortRun("debate/k2-set-nx-px", "duration: 5s", "duration: 3s")
	if err != nil {
		return nil, err
	}
	control, err := shortRun("no-faults-set-nx-px", "duration: 4s", "duration: 1s")
	if err != nil {
		return nil, err
	}
	return &runs{pause: pause, control: control}, nil
})

type runs struct{ pause, control *runner.Result }

func shortRun(name, from, to string) (*runner.Result, error) {
	src, err := os.ReadFile(filepath.Join("..", "scenarios", name+".yaml"))
	if err != nil {
		return nil, err
	}
	text := strings.Replace(string(src), from, to, 1)
	tmp, err := os.MkdirTemp("", "lockcheck-report-scenario-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, filepath.Base(name)+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	sc, err := scenarios.Load(path)
	if err != nil {
		return nil, err
	}
	return runner.Run(context.Background(), sc, runner.Options{ResultsDir: resultsRoot,
		Worker: []string{os.Args[0]}, WorkerEnv: append(os.Environ(), workloads.TestWorkerEnv)})
}

func mustRuns(t *testing.T) *runs {
	t.Helper()
	r, err := realRuns()
	if err != nil {
		t.Fatalf("real runs: %v", err)
	}
	for _, res := range []*runner.Result{r.pause, r.control} {
		if res.ReportError != nil {
			t.Fatalf("Judge did not write report.html for %s: %v", res.Dir, res.ReportError)
		}
	}
	return r
}
