package workloads

import "os"

// TestWorkerEnv, added to a runner's WorkerEnv, makes a test binary re-executed as the worker
// (runner.Options{Worker: []string{os.Args[0]}}) act as the worker: see RunIfTestWorker.
const TestWorkerEnv = "LOCKCHECK_TEST_WORKER=1"

// RunIfTestWorker lets a test binary double as the worker process. Called first in TestMain, it
// does nothing unless the environment holds TestWorkerEnv; then it runs the worker (Run) and
// exits: status 0, or 1 after printing Run's error to stderr.
func RunIfTestWorker() {
	if os.Getenv("LOCKCHECK_TEST_WORKER") != "1" {
		return
	}
	if err := Run(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// RunIfWorkerCommand runs the worker and exits when this program was started as `PROG worker`:
// how the harness's own tools (lockbench, lockhunt, lockmutants) serve as their runs' workers.
func RunIfWorkerCommand() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := Run(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
}
