// Package testmain is the TestMain of lockcheck's test binaries that start servers or workers.
package testmain

import (
	"context"
	"fmt"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/workloads"
)

// Run is a test binary's TestMain. Re-executed by the runner as a client's worker
// (workloads.TestWorkerEnv), the binary is that worker. Otherwise it runs the tests with go-redis
// quiet (dial failures across cut links and stopped servers are what the tests provoke), then
// kills whatever process a test left running: every test stops its own, but a panic must not
// leave servers behind. It fails the binary if one outlived even that.
func Run(m *testing.M) {
	workloads.RunIfTestWorker()
	goredis.SetLogger(quiet{})
	code := m.Run()
	if err := proc.KillAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
