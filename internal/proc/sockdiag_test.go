package proc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// listenHelperEnv makes the test binary, re-executed, a process that listens on ADDR and holds
// CONNS loopback connections to that listener ("ADDR,CONNS"), prints the port, and exits when its
// stdin closes (TestMain runs listenHelper).
const listenHelperEnv = "LOCKCHECK_PROC_LISTEN_HELPER"

// listenHelper is the body of startListenHelper's child.
func listenHelper(spec string) {
	addr, n, _ := strings.Cut(spec, ",")
	conns, _ := strconv.Atoi(n)
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var held []net.Conn
	for range conns {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		s, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		held = append(held, c, s)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	runtime.KeepAlive(ln) // a collected net.Conn or Listener closes its socket
	runtime.KeepAlive(held)
	os.Exit(0)
}

// startListenHelper starts a listenHelperEnv process, under the command prefix (e.g. unshare) if
// any, and returns its pid and listening port.
func startListenHelper(tb testing.TB, addr string, conns int, prefix ...string) (pid, port int) {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	args := append(prefix, self)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), listenHelperEnv+"="+addr+","+strconv.Itoa(conns))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("reading the port from the helper (%v): %v", args, err)
	}
	port, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		tb.Fatal(err)
	}
	return cmd.Process.Pid, port
}

func listen(t *testing.T, network, addr string) (port int) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// procWay is ListensOn's /proc way on its own.
func procWay(pid, port int) (bool, error) {
	inodes, err := SocketInodes(pid)
	if err != nil {
		return false, err
	}
	return procListensOn(pid, port, inodes), nil
}

// sockDiagWay is ListensOn's netlink way on its own.
func sockDiagWay(pid, port int) (bool, error) {
	inodes, err := SocketInodes(pid)
	if err != nil {
		return false, err
	}
	return sockDiagListensOn(port, inodes)
}

// checkListens checks ListensOn and each of its two ways, which must agree, against want.
func checkListens(t *testing.T, pid, port int, want bool) {
	t.Helper()
	for _, w := range []struct {
		name string
		f    func(pid, port int) (bool, error)
	}{{"ListensOn", ListensOn}, {"sock_diag", sockDiagWay}, {"/proc", procWay}} {
		got, err := w.f(pid, port)
		if err != nil {
			t.Errorf("%s(pid %d, port %d): %v", w.name, pid, port, err)
		} else if got != want {
			t.Errorf("%s(pid %d, port %d) = %v, want %v", w.name, pid, port, got, want)
		}
	}
}

func TestListensOnOwnSockets(t *testing.T) {
	if !sameNetNS(os.Getpid()) {
		t.Fatal("sameNetNS(own pid) = false")
	}
	me := os.Getpid()

	t.Run("ipv4", func(t *testing.T) { checkListens(t, me, listen(t, "tcp4", "127.0.0.1:0"), true) })

	t.Run("any address", func(t *testing.T) { checkListens(t, me, listen(t, "tcp", ":0"), true) })

	t.Run("ipv6", func(t *testing.T) {
		ln, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback here (cannot listen on [::1]:0: %v)", err)
		}
		defer ln.Close()
		checkListens(t, me, ln.Addr().(*net.TCPAddr).Port, true)
	})

	t.Run("nobody listens", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		checkListens(t, me, port, false)
	})

	// Established sockets on the port, ours, but no listener any more: LISTEN only counts.
	t.Run("established only", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ln.Close()
		checkListens(t, me, port, false)
	})
}

// A port another process listens on is that process's, not ours: the inode check.
func TestListensOnOtherProcess(t *testing.T) {
	pid, port := startListenHelper(t, "127.0.0.1:0", 0)
	if !sameNetNS(pid) {
		t.Fatalf("sameNetNS(%d) = false for a plain child", pid)
	}
	checkListens(t, pid, port, true)
	checkListens(t, os.Getpid(), port, false)
}

// A process in another network namespace (a container's) is invisible to our netlink socket:
// ListensOn must notice and read its /proc/PID/net/tcp.
func TestListensOnOtherNetNS(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a network namespace")
	}
	if err := exec.Command(unshare, "--net", "true").Run(); err != nil {
		t.Skipf("cannot make a network namespace (unshare --net: %v)", err)
	}
	// In a new namespace lo is down, but 0.0.0.0 can always be bound.
	pid, port := startListenHelper(t, "0.0.0.0:0", 0, unshare, "--net")
	if sameNetNS(pid) {
		t.Fatalf("sameNetNS(%d) = true for a process in a new network namespace", pid)
	}
	if ok, err := ListensOn(pid, port); err != nil || !ok {
		t.Errorf("ListensOn(pid %d, port %d) = %v, %v; want true", pid, port, ok, err)
	}
	if ok, err := procWay(pid, port); err != nil || !ok {
		t.Errorf("/proc(pid %d, port %d) = %v, %v; want true", pid, port, ok, err)
	}
	// What the namespace check is for.
	if ok, err := sockDiagWay(pid, port); err != nil || ok {
		t.Errorf("sock_diag(pid %d, port %d) = %v, %v; want false (another namespace)",
			pid, port, ok, err)
	}
}

// BenchmarkListensOn compares ListensOn (which takes the netlink way here) with the /proc way,
// with 200 established loopback connections (400 sockets, in another process) beside the
// listener, as while a cell's servers run.
func BenchmarkListensOn(b *testing.B) {
	startListenHelper(b, "127.0.0.1:0", 200)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	me, port := os.Getpid(), ln.Addr().(*net.TCPAddr).Port
	if !sameNetNS(me) {
		b.Fatal("sameNetNS(own pid) = false")
	}
	b.Logf("%d sockets in /proc/net/tcp{,6}", len(TCPEntries(me)))
	for _, w := range []struct {
		name string
		f    func(pid, port int) (bool, error)
	}{{"netlink", ListensOn}, {"proc", procWay}} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if ok, err := w.f(me, port); err != nil || !ok {
					b.Fatalf("%v, %v", ok, err)
				}
			}
		})
	}
}
