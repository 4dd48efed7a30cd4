// Command lockcheck-worker is one client of a run, as `lockcheck worker` is, in a program that
// links only what a client needs: the lock designs, their clients and the workload. A matrix
// starts a thousand clients; this one starts in a third of the CPU lockcheck's own worker needs
// (no Docker client, whose package start lists every process on the machine). lockcheck uses it
// when `make build` put it beside lockcheck from the same sources (workloads.Program).
package main

import (
	"fmt"
	"os"

	"github.com/lockcheck/lockcheck/workloads"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "worker" {
		fmt.Fprintln(os.Stderr, "lockcheck-worker runs one client of a lockcheck run; lockcheck starts it (usage: lockcheck-worker worker, config on stdin)")
		os.Exit(2)
	}
	if err := workloads.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
