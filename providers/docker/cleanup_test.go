package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/lockcheck/lockcheck/internal/dockertests"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/docker"
	"github.com/lockcheck/lockcheck/providers/docker/images"
)

// leftovers counts the containers and networks labelled with run.
func leftovers(t *testing.T, label, value string) int {
	t.Helper()
	cli, err := images.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", label+"="+value)
	cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(context.Background(), client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items) + len(ns.Items)
}

func TestCloseRemovesContainersAndNetwork(t *testing.T) {
	dockertests.Need(t)
	p, err := docker.New(providers.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dp := p.(*docker.Provider)
	startRedis(t, dp, "n1", false)
	startRedis(t, dp, "n2", false)
	if n := leftovers(t, docker.LabelRun, dp.Run()); n != 3 {
		t.Fatalf("%d containers and networks labelled with the run, want 3", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := leftovers(t, docker.LabelRun, dp.Run()); n != 0 {
		t.Fatalf("%d containers or networks left after Close", n)
	}
}

// TestHelperController is not a test: the next test runs it in a child process, which makes a
// provider with a node, prints the run's id and waits to be killed.
func TestHelperController(t *testing.T) {
	if os.Getenv("LOCKCHECK_DOCKER_HELPER") != "1" {
		t.Skip("helper for TestKilledControllerLeavesNothingBehind")
	}
	p := newProvider(t)
	startRedis(t, p, "n1", false)
	fmt.Printf("RUN %s\n", p.Run())
	time.Sleep(time.Minute)
}

// A controller killed with SIGKILL cannot clean up: its watcher removes its container and network
// within seconds.
func TestKilledControllerLeavesNothingBehind(t *testing.T) {
	dockertests.Need(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperController$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKCHECK_DOCKER_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	run := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if r, ok := strings.CutPrefix(sc.Text(), "RUN "); ok {
			run = r
			break
		}
	}
	if run == "" {
		t.Fatal("the helper never said its run")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if n := leftovers(t, docker.LabelRun, run); n != 2 {
		t.Fatalf("%d containers and networks of the helper's run, want 2", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	eventually(t, 20*time.Second, "the killed controller's container and network removed", func() bool {
		return leftovers(t, docker.LabelRun, run) == 0
	})
	t.Logf("removed %s after the kill", time.Since(killed).Round(100*time.Millisecond))
}

// What a dead controller left behind (its watcher could not run) is removed by the next start.
func TestNextStartRemovesLeftoversOfDeadRuns(t *testing.T) {
	dockertests.Need(t)
	cli, err := images.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ref, err := images.Ref("redis")
	if err != nil {
		t.Fatal(err)
	}
	// A pid that exited: the child's.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{docker.LabelRun: "dead-run-test", docker.LabelController: fmt.Sprintf("%d:12345", dead.Process.Pid)}
	ctx := context.Background()
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Cmd: []string{"sleep", "60"},
		Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.NetworkCreate(ctx, "lockcheck-dead-run-test", client.NetworkCreateOptions{Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if n := leftovers(t, docker.LabelRun, "dead-run-test"); n != 2 {
		t.Fatalf("%d leftovers made, want 2", n)
	}
	p := newProvider(t) // its start sweeps
	if n := leftovers(t, docker.LabelRun, "dead-run-test"); n != 0 {
		t.Fatalf("%d leftovers of a dead run after a new provider started", n)
	}
	// Its own network is alive and untouched.
	if n := leftovers(t, docker.LabelRun, p.Run()); n != 1 {
		t.Fatalf("the new run's network: %d, want 1", n)
	}
}
