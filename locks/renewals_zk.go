package locks

// renewals_zk.go: a ZooKeeper session's renewals, read off its client's connection. A ZooKeeper
// server renews a session's timeout with every request it gets from the session, and answers
// one connection's requests in order, each reply carrying its request's xid: so each reply to a
// request (a ping, a read, a create) says the session lived when that request arrived, no
// earlier than it was sent, and the session lasts its timeout from then. The first exchange on a
// connection establishes the session, or takes it up again after a reconnection: its answer
// gives the session's id and the timeout the server granted, or a timeout of 0 when the session
// has expired. A lock library's own code never needs to say any of this. A busy session makes
// many requests: one renewal per tenth of its timeout is reported, which shortens what the history
// shows of the session's life by that tenth at most (a renewal left out only promises less).
//
// The adapters of Go libraries at a version (adapters/_go) use a copy of this file: they are
// built with the standard library only (a test keeps the two the same).

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"
)

// zkSessionExpired is ZooKeeper's error code for a request of a session that has expired.
const zkSessionExpired = -112

// zkRenewalConn is a connection to a ZooKeeper server whose requests and replies are read as
// renewals of the session, reported to report.
type zkRenewalConn struct {
	net.Conn
	report func(asked, answered int64, ok bool, session string, lease time.Duration)

	mu          sync.Mutex
	out, in     []byte            // bytes written and read that do not yet make a whole frame
	connected   bool              // the connect exchange is over: frames carry xids
	connectSent int64             // when the connect request was written
	sent        map[int32][]int64 // when each request still unanswered was written, by xid
	session     string            // "session 1000a2b3c4d0001", once the server said
	lease       time.Duration     // the session timeout the server granted
	reported    int64             // when the last renewal reported was asked
	wroteFirst  bool              // the connect request was written
}

// newZKRenewalConn wraps c.
func newZKRenewalConn(c net.Conn, report func(asked, answered int64, ok bool, session string, lease time.Duration)) *zkRenewalConn {
	return &zkRenewalConn{Conn: c, report: report, sent: map[int32][]int64{}}
}

// Write notes when each request frame was written, before it goes: its sending is no earlier.
func (c *zkRenewalConn) Write(b []byte) (int, error) {
	now := monotonicNow()
	c.mu.Lock()
	c.out = append(c.out, b...)
	for {
		frame, rest, ok := zkFrame(c.out)
		if !ok {
			break
		}
		c.out = rest
		if !c.wroteFirst {
			c.wroteFirst, c.connectSent = true, now
			continue
		}
		if len(frame) >= 4 {
			xid := int32(binary.BigEndian.Uint32(frame))
			c.sent[xid] = append(c.sent[xid], now)
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// Read reports each reply to a request as a renewal.
func (c *zkRenewalConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n <= 0 {
		return n, err
	}
	now := monotonicNow()
	type renewal struct {
		asked int64
		ok    bool
	}
	var got []renewal
	c.mu.Lock()
	c.in = append(c.in, b[:n]...)
	for {
		frame, rest, ok := zkFrame(c.in)
		if !ok {
			break
		}
		c.in = rest
		if !c.connected {
			// protocolVersion int32, timeOut int32, sessionId int64, ...
			c.connected = true
			if len(frame) < 16 || c.connectSent == 0 {
				continue
			}
			timeout := int32(binary.BigEndian.Uint32(frame[4:]))
			if id := binary.BigEndian.Uint64(frame[8:]); id != 0 {
				c.session = fmt.Sprintf("session %x", id) // as zkSessionName
			}
			if timeout > 0 {
				c.lease = time.Duration(timeout) * time.Millisecond
			}
			got = append(got, renewal{c.connectSent, timeout > 0})
			continue
		}
		// xid int32, zxid int64, err int32: a reply, or a watch's notification (xid -1).
		if len(frame) < 16 {
			continue
		}
		xid := int32(binary.BigEndian.Uint32(frame))
		code := int32(binary.BigEndian.Uint32(frame[12:]))
		q := c.sent[xid]
		if len(q) == 0 {
			continue // a notification: it answers no request
		}
		c.sent[xid] = q[1:]
		got = append(got, renewal{q[0], code != zkSessionExpired})
	}
	session, lease := c.session, c.lease
	var due []renewal
	for _, r := range got {
		if session != "" && (!r.ok || lease > 0 && r.asked >= c.reported+int64(lease/10)) {
			due = append(due, r)
			c.reported = r.asked
		}
	}
	c.mu.Unlock()
	for _, r := range due {
		c.report(r.asked, now, r.ok, session, lease)
	}
	return n, err
}

// zkFrame splits off the first whole frame of b (a 4-byte length, then that many bytes).
func zkFrame(b []byte) (frame, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if n < 0 || len(b) < 4+n {
		return nil, b, false
	}
	return b[4 : 4+n], b[4+n:], true
}
