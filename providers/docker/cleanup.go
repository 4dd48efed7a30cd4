package docker

// Cleaning up without Ryuk. Every container and network a run makes carries labels naming the
// run and its controller (pid and the pid's start time, so a reused pid is not mistaken for it):
//   - Close removes them (the end of a run, Ctrl-C);
//   - a watcher process (a small shell loop, started detached so it outlives a SIGKILLed
//     controller) removes them about a second after the controller is gone;
//   - Sweep, at every provider's start, removes whatever a controller that is no longer alive
//     left behind (if the watcher could not run: no docker command, a machine reboot, ...).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Labels on every container and network of a run.
const (
	LabelRun        = "lockcheck.run"        // the run's id
	LabelController = "lockcheck.controller" // "pid:starttime" of the process that made it
	LabelDir        = "lockcheck.dir"        // the run folder, for people looking at docker ps
	LabelNode       = "lockcheck.node"       // containers: the node's name
)

func runLabels(run, dir string) map[string]string {
	return map[string]string{LabelRun: run, LabelController: controllerID(os.Getpid()), LabelDir: dir}
}

// controllerID is "pid:starttime" for a live pid, "pid:" when its start time cannot be read.
func controllerID(pid int) string {
	return strconv.Itoa(pid) + ":" + startTime(pid)
}

// startTime is field 22 of /proc/<pid>/stat (clock ticks since boot), "" if the pid is not alive.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields after the comm start at field 3 (state)
}

// controllerAlive reports whether the controller named by a label value still runs.
func controllerAlive(label string) bool {
	pidStr, start, ok := strings.Cut(label, ":")
	pid, err := strconv.Atoi(pidStr)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	now := startTime(pid)
	return now != "" && now == start
}

// Sweep removes the containers and networks of runs whose controller is no longer alive, and
// returns how many it removed.
func Sweep(ctx context.Context, cli *testcontainers.DockerClient) (int, error) {
	removed := 0
	var errs []error
	filter := make(client.Filters).Add("label", LabelController)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if controllerAlive(c.Labels[LabelController]) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if controllerAlive(n.Labels[LabelController]) {
			continue
		}
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// reaper is the watcher process of one run.
type reaper struct {
	cmd *exec.Cmd
}

// reaperScript waits while the controller (pid $1, start time $2) lives, then removes the run's
// ($3) containers and networks with the docker command.
const reaperScript = `
alive() { [ "$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f20)" = "$2" ]; }
while alive "$1" "$2"; do sleep 1; done
c=$(docker ps -aq --filter "label=` + LabelRun + `=$3")
[ -z "$c" ] || docker rm -f $c >/dev/null 2>&1
n=$(docker network ls -q --filter "label=` + LabelRun + `=$3")
[ -z "$n" ] || docker network rm $n >/dev/null 2>&1
`

// startReaper starts the watcher for run, or returns nil (logged) when it cannot: Sweep at the
// next start then removes what a killed controller left. It is deliberately not a child that dies
// with the controller (internal/proc): its job starts when the controller dies.
func startReaper(run string, log interface{ Debug(string, ...any) }) *reaper {
	if _, err := exec.LookPath("docker"); err != nil {
		log.Debug("no docker command: a killed controller's containers are removed at the next start", "err", err)
		return nil
	}
	pid := os.Getpid()
	cmd := exec.Command("sh", "-c", reaperScript, "lockcheck-reaper", strconv.Itoa(pid), startTime(pid), run)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in our process group: a Ctrl-C is ours
	if err := cmd.Start(); err != nil {
		log.Debug("watcher not started: a killed controller's containers are removed at the next start", "err", err)
		return nil
	}
	go func() { _ = cmd.Wait() }()
	return &reaper{cmd: cmd}
}

// stop ends the watcher (the run removed its containers itself).
func (r *reaper) stop() {
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
}
