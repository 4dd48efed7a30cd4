package docker_test

import (
	"context"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/lockcheck/lockcheck/internal/dockertests"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/docker"
	"github.com/lockcheck/lockcheck/providers/docker/images"
)

func newProvider(t *testing.T) *docker.Provider {
	t.Helper()
	dockertests.Need(t)
	p, err := docker.New(providers.Options{Dir: t.TempDir(), Logger: testLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p.(*docker.Provider)
}

type testLogger struct{ t *testing.T }

func (l testLogger) Debug(msg string, args ...any) {
	l.t.Helper()
	l.t.Log(append([]any{msg}, args...)...)
}

// containerState asks Docker for a node's container state.
func containerState(t *testing.T, n providers.Node) *container.State {
	t.Helper()
	cli, err := images.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id := n.(interface{ ContainerID() string }).ContainerID()
	res, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container.State
}
