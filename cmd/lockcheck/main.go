// Command lockcheck runs distributed locks against real servers under real faults and judges the
// recorded history. See the README for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/internal/proc"
	_ "github.com/lockcheck/lockcheck/providers/all" // where servers may run: local, external, docker
	_ "github.com/lockcheck/lockcheck/services/all"  // the kinds of lock service scenarios may run on
)

// Exit codes: a run is a CI gate.
const (
	exitMatch    = 0 // the verdict matches the scenario's expect block
	exitMismatch = 1 // it does not
	exitHarness  = 2 // the harness could not run or judge (bad scenario, servers failed, interrupted)
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := interruptContext()
	defer stop()
	defer proc.KillAll() // whatever happens, nothing we started outlives us

	root := newRootCommand()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitMatch
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitMismatch {
			fmt.Fprintln(os.Stderr, "lockcheck:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "lockcheck:", err)
	return exitHarness
}

// interruptContext is cancelled by the first SIGINT/SIGTERM, which starts an orderly shutdown
// (heal, stop clients, keep the history). A second one kills every child at once and exits.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "lockcheck: interrupted; healing faults and saving the history (again to force quit)")
		cancel()
		<-sigs
		_ = proc.KillAll()
		os.Exit(exitHarness)
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "lockcheck",
		Short:         "Jepsen-style correctness and fault-injection harness for distributed locks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolP("verbose", "v", false, "log what the harness does")
	root.AddCommand(newRunCommand(), newCheckCommand(), newListCommand(), newFaultsCommand(), newWorkerCommand(), newMatrixCommand(), newDebateCommand())
	root.AddCommand(newReportCommand(), newServeCommand(), newImagesCommand(), newMergeCommand())
	root.AddCommand(newScenariosCommand(), newInitCommand()) // scenarios_cmd.go, init.go
	root.AddCommand(newHuntCommand(), newShrinkCommand())    // hunt.go, shrink.go
	return root
}
