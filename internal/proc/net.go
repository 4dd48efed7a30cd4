package proc

// A process's TCP sockets, read from /proc: how the harness checks that a port is answered by the
// server it started (not by someone else who took the port), and how tests prove that two servers
// never talk to each other around their proxies. ListensOn, polled while servers start, asks
// sock_diag over netlink when it can: the kernel writes /proc/net/tcp by walking every socket.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCP socket states as /proc/net/tcp writes them.
const (
	TCPEstablished = "01"
	TCPListen      = "0A"
)

// TCPEntry is one line of /proc/net/tcp{,6}.
type TCPEntry struct {
	Local, Remote string // hex address:port as in the file
	LocalPort     int
	RemotePort    int
	State, Inode  string
}

// ListensOn reports whether process pid has a listening TCP socket on port (any address).
// A netlink socket sees only our own network namespace: for a process in another one (a
// container's), or if the netlink query fails, it reads /proc/PID/net/tcp{,6}.
func ListensOn(pid, port int) (bool, error) {
	inodes, err := SocketInodes(pid)
	if err != nil {
		return false, err
	}
	if sameNetNS(pid) {
		if ok, err := sockDiagListensOn(port, inodes); err == nil {
			return ok, nil
		}
	}
	return procListensOn(pid, port, inodes), nil
}

// procListensOn is ListensOn read from /proc/PID/net/tcp{,6}, which show pid's network namespace.
func procListensOn(pid, port int, inodes map[string]bool) bool {
	for _, e := range TCPEntries(pid) {
		if e.State == TCPListen && e.LocalPort == port && inodes[e.Inode] {
			return true
		}
	}
	return false
}

// SocketInodes returns the inodes of the sockets process pid has open.
func SocketInodes(pid int) (map[string]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out, nil
}

// TCPEntries lists the TCP sockets of pid's network namespace (IPv4 and IPv6).
func TCPEntries(pid int) []TCPEntry {
	var out []TCPEntry
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/" + f)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			lp, lok := hexPort(fs[1])
			rp, rok := hexPort(fs[2])
			if !lok || !rok {
				continue
			}
			out = append(out, TCPEntry{Local: fs[1], Remote: fs[2], LocalPort: lp, RemotePort: rp, State: fs[3], Inode: fs[9]})
		}
	}
	return out
}

func hexPort(addr string) (int, bool) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0, false
	}
	port, err := strconv.ParseUint(addr[i+1:], 16, 16)
	return int(port), err == nil
}
