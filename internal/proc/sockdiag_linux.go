package proc

// Listening TCP sockets from the kernel's sock_diag netlink interface. The kernel writes
// /proc/net/tcp{,6} by walking every TCP hash bucket, established ones included; a dump asking
// for LISTEN only, filtered to one port, reads just the listening hash.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// linux/inet_diag.h, which golang.org/x/sys/unix does not carry (v0.49.0): sizes and offsets of
// struct inet_diag_req_v2 and struct inet_diag_msg, and the bytecode filter's codes.
const (
	sizeofInetDiagReqV2 = 56
	sizeofInetDiagMsg   = 72
	inetDiagMsgState    = 1  // __u8 idiag_state
	inetDiagMsgSport    = 4  // __be16 id.idiag_sport
	inetDiagMsgInode    = 68 // __u32 idiag_inode

	inetDiagReqBytecode = 1 // INET_DIAG_REQ_BYTECODE
	inetDiagBcSGE       = 2 // INET_DIAG_BC_S_GE
	inetDiagBcSLE       = 3 // INET_DIAG_BC_S_LE

	tcpListen = 10 // TCP_LISTEN
)

var sockDiagSeq atomic.Uint32

// sameNetNS reports whether process pid is in our network namespace, the only one a netlink
// socket of ours can see.
func sameNetNS(pid int) bool {
	var self, other unix.Stat_t
	if unix.Stat("/proc/self/ns/net", &self) != nil ||
		unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/net", &other) != nil {
		return false
	}
	return self.Dev == other.Dev && self.Ino == other.Ino
}

// sockDiagListensOn reports whether one of the sockets in inodes (as SocketInodes gives them)
// listens on TCP port in our network namespace. An error means the query could not be made.
func sockDiagListensOn(port int, inodes map[string]bool) (bool, error) {
	listeners, err := sockDiagListeners(port)
	if err != nil {
		return false, err
	}
	for _, ino := range listeners {
		if inodes[strconv.FormatUint(uint64(ino), 10)] {
			return true, nil
		}
	}
	return false, nil
}

// sockDiagListeners returns the inodes of the IPv4 and IPv6 TCP sockets listening on port.
func sockDiagListeners(port int) ([]uint32, error) {
	if port <= 0 || port > 0xffff {
		return nil, fmt.Errorf("sock_diag: bad port %d", port)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers a dump request at once; the timeout only keeps a poll loop from hanging
	// on something unforeseen (it then falls back to /proc).
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("sock_diag: SO_RCVTIMEO: %w", err)
	}
	var out []uint32
	buf := make([]byte, 32<<10)
	// One dump at a time: a netlink socket refuses a second while one runs (EBUSY).
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		out, err = sockDiagDump(fd, family, uint16(port), buf, out)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sockDiagDump asks for the listening TCP sockets of one address family on port and appends
// their inodes to out.
func sockDiagDump(fd int, family uint8, port uint16, buf []byte, out []uint32) ([]uint32, error) {
	ne := binary.NativeEndian
	seq := sockDiagSeq.Add(1)

	// nlmsghdr, inet_diag_req_v2, then an INET_DIAG_REQ_BYTECODE attribute. A dump ignores the
	// request's id fields, so the port goes in the bytecode: "sport >= port, then sport <= port".
	// Each op is {code, yes, no}: yes jumps to the next test, no jumps past the end (reject); the
	// op after each test only holds the port in its no field.
	const bcLen = 16
	const attrLen = unix.SizeofNlAttr + bcLen
	const msgLen = unix.SizeofNlMsghdr + sizeofInetDiagReqV2 + attrLen
	var req [msgLen]byte
	ne.PutUint32(req[0:], msgLen)
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], seq)
	r := req[unix.SizeofNlMsghdr:]
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 1<<tcpListen) // idiag_states
	a := r[sizeofInetDiagReqV2:]
	ne.PutUint16(a[0:], attrLen)
	ne.PutUint16(a[2:], inetDiagReqBytecode)
	bc := a[unix.SizeofNlAttr:]
	bc[0], bc[1] = inetDiagBcSGE, 8
	ne.PutUint16(bc[2:], bcLen+4)
	ne.PutUint16(bc[6:], port)
	bc[8], bc[9] = inetDiagBcSLE, 8
	ne.PutUint16(bc[10:], bcLen-8+4)
	ne.PutUint16(bc[14:], port)

	if err := unix.Sendto(fd, req[:], 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return out, fmt.Errorf("sock_diag: send: %w", err)
	}
	for {
		n, _, flags, _, err := unix.Recvmsg(fd, buf, nil, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return out, fmt.Errorf("sock_diag: receive: %w", err)
		}
		if flags&unix.MSG_TRUNC != 0 {
			return out, errors.New("sock_diag: reply truncated")
		}
		for b := buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(ne.Uint32(b[0:]))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return out, errors.New("sock_diag: malformed reply")
			}
			typ, mseq, payload := ne.Uint16(b[4:]), ne.Uint32(b[8:]), b[unix.SizeofNlMsghdr:l]
			if next := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1); next < len(b) {
				b = b[next:]
			} else {
				b = nil
			}
			if mseq != seq {
				continue
			}
			switch typ {
			case unix.NLMSG_DONE:
				// The payload is an int, negative if the dump failed.
				if len(payload) >= 4 {
					if e := int32(ne.Uint32(payload)); e < 0 {
						return out, fmt.Errorf("sock_diag: dump: %w", unix.Errno(-e))
					}
				}
				return out, nil
			case unix.NLMSG_ERROR:
				if len(payload) < 4 {
					return out, errors.New("sock_diag: malformed error reply")
				}
				if e := int32(ne.Uint32(payload)); e < 0 {
					return out, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
				}
			case unix.SOCK_DIAG_BY_FAMILY:
				if len(payload) < sizeofInetDiagMsg {
					return out, errors.New("sock_diag: short inet_diag_msg")
				}
				// The filter already did this; checking again costs nothing.
				if payload[inetDiagMsgState] == tcpListen &&
					binary.BigEndian.Uint16(payload[inetDiagMsgSport:]) == port {
					out = append(out, ne.Uint32(payload[inetDiagMsgInode:]))
				}
			}
		}
	}
}
