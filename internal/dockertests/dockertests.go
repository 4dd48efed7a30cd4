// Package dockertests decides, for a test that runs containers, whether it runs here: only when
// asked (LOCKCHECK_DOCKER_TESTS=1, which `make test-docker` sets, after building the provider's
// images), and then a Docker daemon that does not answer fails it instead of skipping it.
package dockertests

import (
	"context"
	"os"
	"testing"

	"github.com/lockcheck/lockcheck/providers/docker/images"
)

// Env is the variable that asks for the docker provider's tests.
const Env = "LOCKCHECK_DOCKER_TESTS"

// Need skips t, in one line, unless the docker provider's tests were asked for, and fails it when
// they were but no Docker daemon answers.
func Need(t testing.TB) {
	t.Helper()
	if os.Getenv(Env) != "1" {
		t.Skip("docker provider test: make test-docker runs it (" + Env + "=1)")
	}
	cli, err := images.Connect(context.Background())
	if err != nil {
		t.Fatalf("%s=1 but %v", Env, err)
	}
	cli.Close()
}
