package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"

	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/providers/faketime"
)

const (
	// startTimeout bounds one start, from docker start to ready.
	startTimeout = 60 * time.Second
	// portAttempts: a first start whose host port was taken meanwhile tries fresh ports; a
	// restart (whose port cannot move: client links point at it) tries the same port again.
	portAttempts = 5
	readyPoll    = 10 * time.Millisecond
	// apiTimeout bounds one call to the daemon for a fault (pause, kill, an iptables change).
	apiTimeout = 20 * time.Second
	// startScript is written into the node's folder before every start; it is the container's
	// command, so each start may run a different command line (Command is asked afresh).
	startScript = ".lockcheck-start"
)

// node is one server in its own container. The container stays (its address, published ports
// and folder with it) across kills and restarts; only Stop removes it.
type node struct {
	p     *Provider
	spec  providers.NodeSpec
	image string
	ip    netip.Addr
	dir   string          // the node's folder on the host, mounted at ContainerDir
	clock *faketime.Clock // nil without spec.Clock

	restartMu sync.Mutex // serialises starts, restarts and Stop

	mu     sync.Mutex
	ports  map[string]int // host ports, by port name
	held   []net.Listener // the reserved host ports, until the first start
	c      *testcontainers.DockerContainer
	execID string // the server's process: a docker exec in the container
	closed bool
}

func newNode(p *Provider, spec providers.NodeSpec, image string, ip netip.Addr) (*node, error) {
	dir, err := nodeDir(p.o.Dir, spec.Name)
	if err != nil {
		return nil, err
	}
	n := &node{p: p, spec: spec, image: image, ip: ip, dir: dir}
	if err := n.reservePorts(); err != nil {
		return nil, err
	}
	if spec.Clock {
		// The file is written here, on the host; the server reads it through the mount.
		if n.clock, err = faketime.New(filepath.Join(dir, faketime.FileName)); err != nil {
			return nil, fmt.Errorf("node %s: %w", spec.Name, err)
		}
	}
	return n, nil
}

func (n *node) reservePorts() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ports = map[string]int{}
	for _, pt := range n.spec.Ports {
		l, port, err := freePort()
		if err != nil {
			for _, h := range n.held {
				h.Close()
			}
			n.held = nil
			return err
		}
		n.held = append(n.held, l)
		n.ports[pt.Name] = port
	}
	return nil
}

func (n *node) releasePorts() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.held {
		l.Close()
	}
	n.held = nil
}

func (n *node) containerPort(name string) (int, bool) {
	for _, pt := range n.spec.Ports {
		if pt.Name == name {
			return pt.Number, true
		}
	}
	return 0, false
}

// placement is where the server runs, as it sees it: it binds its own address on the run's
// network (so what it announces to peers is an address they reach), its folder is ContainerDir.
func (n *node) placement() providers.Placement {
	ports := map[string]int{}
	for _, pt := range n.spec.Ports {
		ports[pt.Name] = pt.Number
	}
	return providers.Placement{Host: n.ip.String(), Ports: ports, Dir: ContainerDir, HostDir: n.dir,
		Peer:   func(to, port string) (string, error) { return n.p.peer(n.spec.Name, to, port) },
		Direct: n.p.direct}
}

// Name is the node's name.
func (n *node) Name() string { return n.spec.Name }

// Addr is the port published on 127.0.0.1; it stays the same across restarts.
func (n *node) Addr(port string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.ports[port]
	if !ok {
		return ""
	}
	return hostPort(p)
}

// Advertised is the node's address on the run's network and the container port: what other
// containers reach it at, and what a server reports about it.
func (n *node) Advertised(port string) string {
	p, ok := n.containerPort(port)
	if !ok {
		return ""
	}
	return net.JoinHostPort(n.ip.String(), strconv.Itoa(p))
}

// Dir is the node's folder on the host.
func (n *node) Dir() string { return n.dir }

// IP is the node's address on the run's network.
func (n *node) IP() netip.Addr { return n.ip }

// ContainerID is the node's container (empty before its first start): for tests.
func (n *node) ContainerID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.c == nil {
		return ""
	}
	return n.c.GetContainerID()
}

func (n *node) container() (*testcontainers.DockerContainer, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.c == nil {
		return nil, fmt.Errorf("node %s: not started", n.spec.Name)
	}
	return n.c, nil
}

func apiCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), apiTimeout)
}

// Pause freezes the whole container (the cgroup freezer: docker pause).
func (n *node) Pause() error {
	c, err := n.container()
	if err != nil {
		return err
	}
	ctx, cancel := apiCtx()
	defer cancel()
	if _, err := n.p.cli.ContainerPause(ctx, c.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("node %s: pause: %w", n.spec.Name, err)
	}
	return nil
}

// Resume thaws it.
func (n *node) Resume() error {
	c, err := n.container()
	if err != nil {
		return err
	}
	ctx, cancel := apiCtx()
	defer cancel()
	if _, err := n.p.cli.ContainerUnpause(ctx, c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("node %s: resume: %w", n.spec.Name, err)
	}
	return nil
}

// state inspects the container.
func (n *node) state(ctx context.Context) (*container.State, error) {
	c, err := n.container()
	if err != nil {
		return nil, err
	}
	res, err := n.p.cli.ContainerInspect(ctx, c.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s: inspect: %w", n.spec.Name, err)
	}
	if res.Container.State == nil {
		return nil, fmt.Errorf("node %s: inspect: no state", n.spec.Name)
	}
	return res.Container.State, nil
}

// Kill SIGKILLs every process in the container but its idle PID 1 (the server and whatever it
// forked), from the host, through the container's cgroup. It does not wait. A frozen container is
// killed as it is thawed: the signals are sent first, so the server runs no instruction after
// the thaw.
func (n *node) Kill() error {
	ctx, cancel := apiCtx()
	defer cancel()
	st, err := n.state(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return fmt.Errorf("node %s: its container is not running", n.spec.Name)
	}
	if err := killAllBut(st.Pid); err != nil {
		return fmt.Errorf("node %s: kill: %w", n.spec.Name, err)
	}
	if st.Paused {
		c, _ := n.container()
		if _, err := n.p.cli.ContainerUnpause(ctx, c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("node %s: thaw to kill: %w", n.spec.Name, err)
		}
	}
	return nil
}

// killAndWait kills the server and waits until it is gone.
func (n *node) killAndWait(ctx context.Context) error {
	if err := n.Kill(); err != nil {
		return err
	}
	for {
		running, _, err := n.server(ctx)
		if err != nil {
			return err
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: still running after SIGKILL: %w", n.spec.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// server reports whether the server's process runs, and its pid on the host.
func (n *node) server(ctx context.Context) (bool, int, error) {
	n.mu.Lock()
	id := n.execID
	n.mu.Unlock()
	if id == "" {
		return false, 0, nil
	}
	res, err := n.p.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
	if err != nil {
		return false, 0, fmt.Errorf("node %s: inspect its server: %w", n.spec.Name, err)
	}
	return res.Running, res.PID, nil
}

// SetClock sets the node's clock through libfaketime in its container.
func (n *node) SetClock(offset time.Duration, rate float64) error {
	if n.clock == nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, providers.ErrNoClock)
	}
	if err := n.clock.Set(offset, rate); err != nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, err)
	}
	return nil
}

// firstStart creates and starts the node's container, then its server. If a host port was taken
// meanwhile, it removes the container and tries on fresh ports.
func (n *node) firstStart(ctx context.Context) error {
	n.restartMu.Lock()
	defer n.restartMu.Unlock()
	var err error
	for i := 0; i < portAttempts; i++ {
		if err = n.create(ctx); !errors.Is(err, errPortInUse) {
			break
		}
		n.p.o.Logger.Debug("host port taken, retrying on fresh ports", "node", n.spec.Name, "err", err)
		if err := n.reservePorts(); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return n.launch(ctx)
}

// errPortInUse means a host port the node publishes was taken by someone else.
var errPortInUse = errors.New("host port already in use")

// create creates and starts the node's container: its fixed address on the run's network, its
// host ports on 127.0.0.1, its folder, NET_ADMIN for iptables, the run's labels. Its PID 1 only
// sleeps: the server runs beside it (launch), so a kill and a restart keep the container, and with
// it the network namespace, the address, the published ports and the cuts in force.
func (n *node) create(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return fmt.Errorf("node %s: stopped", n.spec.Name)
	}
	bindings := network.PortMap{}
	var exposed []string
	for _, pt := range n.spec.Ports {
		cp := network.MustParsePort(strconv.Itoa(pt.Number) + "/tcp")
		bindings[cp] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(n.ports[pt.Name])}}
		exposed = append(exposed, cp.String())
	}
	n.mu.Unlock()
	n.releasePorts() // Docker binds them now; nothing of ours takes them meanwhile
	labels := map[string]string{LabelNode: n.spec.Name}
	for k, v := range n.p.labels {
		labels[k] = v
	}
	netName := n.p.net.Name
	req := testcontainers.ContainerRequest{
		Image:          n.image,
		Name:           "lockcheck-" + n.p.run + "-" + n.spec.Name,
		Labels:         labels,
		Cmd:            []string{"sleep", "infinity"},
		ExposedPorts:   exposed,
		Networks:       []string{netName},
		NetworkAliases: map[string][]string{netName: {n.spec.Name}},
		ConfigModifier: func(c *container.Config) {
			c.Hostname = n.spec.Name
			c.WorkingDir = ContainerDir
		},
		HostConfigModifier: func(h *container.HostConfig) {
			h.PortBindings = bindings
			h.CapAdd = []string{"NET_ADMIN"}
			h.Binds = []string{n.dir + ":" + ContainerDir}
		},
		EndpointSettingsModifier: func(eps map[string]*network.EndpointSettings) {
			if ep := eps[netName]; ep != nil {
				ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: n.ip}
			}
		},
	}
	began := time.Now()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if c != nil {
		n.mu.Lock()
		n.c = c.(*testcontainers.DockerContainer)
		n.mu.Unlock()
	}
	if err != nil {
		_ = n.remove()
		msg := err.Error()
		if strings.Contains(msg, "address already in use") || strings.Contains(msg, "port is already allocated") {
			return fmt.Errorf("node %s: %w: %v", n.spec.Name, errPortInUse, err)
		}
		return fmt.Errorf("node %s: start container from %s: %w", n.spec.Name, n.image, err)
	}
	n.p.o.Logger.Debug("container started", "node", n.spec.Name, "container", n.c.GetContainerID()[:12], "ip", n.ip, "took", time.Since(began))
	return nil
}

// Restart kills the server if it runs and starts it again in the same container (same address,
// host ports, folder, clock and cuts; the command line asked afresh), and waits until it is ready.
func (n *node) Restart(ctx context.Context) error {
	n.restartMu.Lock()
	defer n.restartMu.Unlock()
	kctx, cancel := context.WithTimeout(ctx, apiTimeout)
	err := n.killAndWait(kctx)
	cancel()
	if err != nil {
		return err
	}
	return n.launch(ctx)
}

// launch writes the start script, runs it in the container (docker exec) and waits until the
// server is ready; on failure the server is killed.
func (n *node) launch(ctx context.Context) error {
	n.mu.Lock()
	closed := n.closed
	n.mu.Unlock()
	if closed {
		return fmt.Errorf("node %s: stopped", n.spec.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	args, err := n.spec.Command(n.placement())
	if err != nil {
		return fmt.Errorf("node %s: %w", n.spec.Name, err)
	}
	if len(args) == 0 {
		return fmt.Errorf("node %s: empty command", n.spec.Name)
	}
	logName := n.spec.LogFile
	if logName == "" {
		logName = "server.log"
	}
	logFile := filepath.Join(n.dir, logName)
	logStart := fileSize(logFile)
	var env []string
	env = append(env, n.spec.Env...)
	if n.clock != nil {
		if err := n.clock.Starting(); err != nil {
			return fmt.Errorf("node %s: %w", n.spec.Name, err)
		}
		env = append(env, faketime.Env(ContainerDir+"/"+faketime.FileName)...)
	}
	script := startScriptText(n.spec.Name, args, env, n.spec.User, ContainerDir+"/"+logName)
	if err := os.WriteFile(filepath.Join(n.dir, startScript), []byte(script), 0o644); err != nil {
		return err
	}
	c, err := n.container()
	if err != nil {
		return err
	}
	began := time.Now()
	ex, err := n.p.cli.ExecCreate(ctx, c.GetContainerID(), client.ExecCreateOptions{Cmd: []string{"/bin/sh",
		ContainerDir + "/" + startScript}, WorkingDir: ContainerDir})
	if err == nil {
		_, err = n.p.cli.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true})
	}
	if err != nil {
		return fmt.Errorf("node %s: start %s in its container: %w", n.spec.Name, args[0], err)
	}
	n.mu.Lock()
	n.execID = ex.ID
	n.mu.Unlock()
	if err := n.waitReady(ctx); err != nil {
		kctx, kcancel := context.WithTimeout(context.Background(), apiTimeout)
		_ = n.killAndWait(kctx)
		kcancel()
		return fmt.Errorf("node %s (%s in container %s) not ready: %w; "+
			"%s:\n%s", n.spec.Name, args[0], n.image, err, logFile, providers.LogTail(logFile, logStart))
	}
	n.p.o.Logger.Debug("node ready", "node", n.spec.Name, "ip", n.ip, "took", time.Since(began))
	return nil
}

// startScriptText is the shell script that starts the server: the environment, the server's
// command line (as another user if asked, owning the node's folder), its output appended to the
// log. exec: the server is the process docker exec started, so its pid is the server's.
func startScriptText(name string, args, env []string, user, log string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by lockcheck before each start of node %s\n", name)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	cmd := make([]string, len(args))
	for i, a := range args {
		cmd[i] = shellQuote(a)
	}
	if user != "" {
		fmt.Fprintf(&b, "chown -R %s: %s\n", shellQuote(user), ContainerDir)
		fmt.Fprintf(&b, "exec setpriv --reuid=%s --regid=%s --init-groups -- %s >>%s "+
			"2>&1\n", shellQuote(user), shellQuote(user), strings.Join(cmd, " "), shellQuote(log))
	} else {
		fmt.Fprintf(&b, "exec %s >>%s 2>&1\n", strings.Join(cmd, " "), shellQuote(log))
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitReady polls until the spec's Ready check passes and the server listens on its first port
// inside the container, or the server exits, or ctx ends.
func (n *node) waitReady(ctx context.Context) error {
	first := n.spec.Ports[0]
	var last error
	for {
		running, pid, err := n.server(ctx)
		switch {
		case err != nil:
			last = err
		case !running:
			return errors.New("the server exited")
		default:
			last = nil
			if n.spec.Ready != nil {
				last = n.spec.Ready(ctx, n)
			}
			if last == nil && pid > 0 {
				// The host pid's sockets are the container's (one network namespace).
				ok, err := proc.ListensOn(pid, first.Number)
				switch {
				case err != nil:
					last = err
				case !ok:
					last = fmt.Errorf("port %d (%s) is not listened on in the container", first.Number, first.Name)
				default:
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last)
		case <-time.After(readyPoll):
		}
	}
}

// applyCuts adds the rules of a cut (cutReset, cutDrop) for each address in both directions, or
// with cutHeal removes both kinds, inside the node's network namespace, where they stay across the
// server's restarts.
func (n *node) applyCuts(ips []netip.Addr, how cutHow) error {
	ctx, cancel := apiCtx()
	defer cancel()
	st, err := n.state(ctx)
	if err != nil {
		return err
	}
	if st.Paused {
		return fmt.Errorf("node %s: paused: its network rules cannot be changed until it is resumed", n.spec.Name)
	}
	c, err := n.container()
	if err != nil {
		return err
	}
	code, out, err := c.Exec(ctx, []string{"/bin/sh", "-c", iptablesScript(ips, how)}, tcexec.Multiplexed())
	if err != nil {
		return fmt.Errorf("node %s: iptables: %w", n.spec.Name, err)
	}
	if code != 0 {
		b, _ := io.ReadAll(out)
		return fmt.Errorf("node %s: iptables exited %d: %s", n.spec.Name, code, strings.TrimSpace(string(b)))
	}
	return nil
}

// cutHow is what applyCuts does.
type cutHow int

const (
	cutReset cutHow = iota // connections fail: TCP resets (REJECT)
	cutDrop                // packets vanish (DROP): connections hang until their own timeouts
	cutHeal                // remove either
)

// cutRules are the rules of a cut of each kind from and to ip.
func cutRules(ip netip.Addr, how cutHow) []string {
	a := ip.String()
	if how == cutDrop {
		return []string{"INPUT -s " + a + " -j DROP", "OUTPUT -d " + a + " -j DROP"}
	}
	// Only TCP gets a reset (the servers speak nothing else to each other), and a reset itself is
	// let through: the reset REJECT makes for a packet leaving for the peer comes back in from the
	// peer's address, and the INPUT rule would swallow it (REJECT answers no reset).
	return []string{"INPUT -s " + a + " -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset",
		"OUTPUT -d " + a + " -p tcp ! --tcp-flags RST RST -j REJECT --reject-with tcp-reset"}
}

// iptablesScript adds, idempotently, the rules of a cut from and to each address, or removes every
// copy of either kind's.
func iptablesScript(ips []netip.Addr, how cutHow) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, ip := range ips {
		if how == cutHeal {
			for _, rule := range append(cutRules(ip, cutReset), cutRules(ip, cutDrop)...) {
				fmt.Fprintf(&b, "while iptables -w -C %s 2>/dev/null; do iptables -w -D %s; done\n", rule, rule)
			}
			continue
		}
		for _, rule := range cutRules(ip, how) {
			fmt.Fprintf(&b, "iptables -w -C %s 2>/dev/null || iptables -w -I %s\n", rule, rule)
		}
	}
	return b.String()
}

// killAllBut SIGKILLs every process of the cgroup that pid (a container's PID 1) is in, except pid
// itself. The cgroup is the container's: Docker puts each container's processes in their own.
func killAllBut(pid int) error {
	procs, err := cgroupProcs(pid)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p != pid {
			if err := syscall.Kill(p, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("SIGKILL %d: %w", p, err)
			}
		}
	}
	return nil
}

// cgroupProcs lists the pids in pid's cgroup: cgroup v2 (one hierarchy), or v1's pids or freezer
// hierarchy.
func cgroupProcs(pid int) ([]int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, filepath.Join("/sys/fs/cgroup", parts[2], "cgroup.procs"))
		case parts[1] == "pids" || parts[1] == "freezer":
			files = append(files, filepath.Join("/sys/fs/cgroup", parts[1], parts[2], "cgroup.procs"))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var out []int
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no cgroup.procs readable for pid %d (%s)", pid, strings.Join(files, ", "))
}

// Stop removes the container for good.
func (n *node) Stop() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.releasePorts()
	n.restartMu.Lock() // wait for a start in progress, which now fails
	defer n.restartMu.Unlock()
	return n.remove()
}

// remove force-removes the container, if there is one.
func (n *node) remove() error {
	n.mu.Lock()
	c := n.c
	n.c, n.execID = nil, ""
	n.mu.Unlock()
	if c == nil {
		return nil
	}
	ctx, cancel := apiCtx()
	defer cancel()
	if _, err := n.p.cli.ContainerRemove(ctx, c.GetContainerID(), client.ContainerRemoveOptions{Force: true}); err != nil &&
		!strings.Contains(strings.ToLower(err.Error()), "no such container") {
		return fmt.Errorf("node %s: remove container: %w", n.spec.Name, err)
	}
	return nil
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
