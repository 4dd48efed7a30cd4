package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/lockcheck/lockcheck/internal/dockertests"
	"github.com/lockcheck/lockcheck/providers/docker"
	"github.com/lockcheck/lockcheck/providers/docker/images"
)

// dockerLeftovers counts the containers and networks whose controller label names pid.
func dockerLeftovers(t *testing.T, pid int) int {
	t.Helper()
	cli, err := images.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", docker.LabelController)
	cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(context.Background(), client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	mine := strconv.Itoa(pid) + ":"
	n := 0
	for _, c := range cs.Items {
		if strings.HasPrefix(c.Labels[docker.LabelController], mine) {
			n++
		}
	}
	for _, nw := range ns.Items {
		if strings.HasPrefix(nw.Labels[docker.LabelController], mine) {
			n++
		}
	}
	return n
}

// A run on the docker provider interrupted by Ctrl-C (SIGINT) or killed with SIGKILL leaves no
// container or network behind: the first cleans up itself, the second through its watcher.
func TestDockerRunLeavesNothingAfterCtrlCOrKill(t *testing.T) {
	dockertests.Need(t)
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "run", "--provider", "docker", "--results", t.TempDir(), "scenarios/debate/k8-redlock.yaml")
			cmd.Dir = repo
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			pid := cmd.Process.Pid
			deadline := time.Now().Add(60 * time.Second)
			for dockerLeftovers(t, pid) < 6 { // 5 nodes and the network
				if time.Now().After(deadline) {
					t.Fatalf("the run's 5 containers and network never appeared:\n%s", out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond) // into the run
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("controller did not exit after %v:\n%s", sig, out.String())
			}
			exited := time.Now()
			for dockerLeftovers(t, pid) > 0 {
				if time.Since(exited) > 20*time.Second {
					t.Fatalf("%d containers or networks left 20s after %v:\n%s", dockerLeftovers(t, pid), sig, out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("nothing left %s after the controller exited (%v)", time.Since(exited).Round(100*time.Millisecond), sig)
		})
	}
}
