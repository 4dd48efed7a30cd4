package locks

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
)

type reported struct {
	asked, answered int64
	ok              bool
	session         string
	lease           time.Duration
}

// frame is a ZooKeeper frame: its length, then the fields, each an int32 or int64 in big-endian.
func frame(fields ...any) []byte {
	var body []byte
	for _, f := range fields {
		switch v := f.(type) {
		case int32:
			body = binary.BigEndian.AppendUint32(body, uint32(v))
		case int64:
			body = binary.BigEndian.AppendUint64(body, uint64(v))
		}
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// The ZooKeeper reader: the connect exchange names the session and its timeout; each reply to a
// request renews it from when the request was written; a watch's notification answers nothing; a
// reply saying the session expired ends it; a reconnection refused for expiry ends it too.
func TestZKRenewalsAreRepliesToTheSessionsRequests(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	var got []reported
	c := newZKRenewalConn(client, func(asked, answered int64, ok bool, session string, lease time.Duration) {
		got = append(got, reported{asked, answered, ok, session, lease})
	})
	go func() {
		buf := make([]byte, 4096)
		for { // the server reads whatever the client writes
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	replies := make(chan []byte, 10)
	go func() {
		for r := range replies {
			_, _ = server.Write(r)
		}
	}()
	read := func() {
		buf := make([]byte, 4096)
		if _, err := c.Read(buf); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	// Connect: protocolVersion, lastZxid, timeout, sessionId, passwd.
	before := monotonicNow()
	if _, err := c.Write(frame(int32(0), int64(0), int32(4000), int64(0), int32(0))); err != nil {
		t.Fatal(err)
	}
	replies <- frame(int32(0), int32(2000), int64(0x1000a), int32(0))
	read()
	// A request soon after, whose renewal is left out (within a tenth of the timeout); a ping
	// (xid -2) past that tenth, answered later; a watch notification (xid -1), which answers nothing.
	if _, err := c.Write(frame(int32(3), int32(4))); err != nil {
		t.Fatal(err)
	}
	replies <- frame(int32(3), int64(6), int32(0))
	read()
	time.Sleep(250 * time.Millisecond)
	if _, err := c.Write(frame(int32(-2), int32(11))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	replies <- frame(int32(-2), int64(7), int32(0))
	read()
	replies <- frame(int32(-1), int64(8), int32(0))
	read()
	// A request answered "session expired".
	if _, err := c.Write(frame(int32(5), int32(8))); err != nil {
		t.Fatal(err)
	}
	replies <- frame(int32(5), int64(9), int32(zkSessionExpired))
	read()
	close(replies)
	if len(got) != 3 {
		t.Fatalf("reported %+v, want the connect, the ping and the expiry", got)
	}
	for i, want := range []bool{true, true, false} {
		r := got[i]
		if r.ok != want || r.session != "session 1000a" || r.asked < before || r.answered < r.asked {
			t.Errorf("renewal %d: %+v", i, r)
		}
	}
	if got[0].lease != 2*time.Second {
		t.Errorf("lease %s, want the 2 s the server granted", got[0].lease)
	}
	if got[1].answered-got[1].asked < int64(40*time.Millisecond) {
		t.Errorf("the ping's renewal counts from when it was written: %+v", got[1])
	}
}

// A reconnection whose session has expired: the server answers the connect with a timeout of 0.
func TestZKRenewalsReportAnExpiredReconnection(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	var got []reported
	c := newZKRenewalConn(client, func(asked, answered int64, ok bool, session string, lease time.Duration) {
		got = append(got, reported{asked, answered, ok, session, lease})
	})
	go func() { _, _ = io.Copy(io.Discard, server) }()
	if _, err := c.Write(frame(int32(0), int64(5), int32(4000), int64(0x1000a), int32(0))); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = server.Write(frame(int32(0), int32(0), int64(0x1000a), int32(0))) }()
	if _, err := c.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ok || got[0].session != "session 1000a" {
		t.Fatalf("reported %+v, want one renewal that failed", got)
	}
}

// etcd: each keep-alive answer renews its lease from when its request was sent, with the TTL the
// server gave; a TTL of 0 says the lease is gone; other streams are not watched.
func TestEtcdRenewalsAreKeepAliveAnswers(t *testing.T) {
	var got []reported
	intercept := etcdRenewals(func(asked, answered int64, ok bool, session string, lease time.Duration) {
		got = append(got, reported{asked, answered, ok, session, lease})
	})
	fake := &fakeStream{}
	open := func(method string) grpc.ClientStream {
		s, err := intercept(context.Background(), &grpc.StreamDesc{}, nil, method,
			func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
				return fake, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	watch := open("/etcdserverpb.Watch/Watch")
	_ = watch.SendMsg(keepAlive{id: 7})
	fake.answers = []keepAlive{{id: 7, ttl: 2}}
	_ = watch.RecvMsg(&keepAlive{})
	if len(got) != 0 {
		t.Fatalf("a watch stream reported %+v", got)
	}
	s := open(etcdKeepAliveMethod)
	_ = s.SendMsg(keepAlive{id: 7})
	_ = s.SendMsg(keepAlive{id: 9})
	time.Sleep(20 * time.Millisecond)
	fake.answers = []keepAlive{{id: 7, ttl: 2}, {id: 9, ttl: 0}}
	for range 2 {
		if err := s.RecvMsg(&keepAlive{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || !got[0].ok || got[0].lease != 2*time.Second || got[0].session != "lease 7" || got[1].ok || got[1].session != "lease 9" {
		t.Fatalf("reported %+v", got)
	}
	if got[0].answered-got[0].asked < int64(20*time.Millisecond) {
		t.Errorf("a renewal counts from when its request was sent: %+v", got[0])
	}
}

// keepAlive stands for etcd's keep-alive request and answer (their getters are all the reader uses).
type keepAlive struct{ id, ttl int64 }

func (k keepAlive) GetID() int64  { return k.id }
func (k keepAlive) GetTTL() int64 { return k.ttl }

// fakeStream answers RecvMsg with its answers in turn, copied into the message.
type fakeStream struct {
	grpc.ClientStream
	answers []keepAlive
}

func (f *fakeStream) SendMsg(any) error { return nil }
func (f *fakeStream) RecvMsg(m any) error {
	if len(f.answers) == 0 {
		return io.EOF
	}
	*m.(*keepAlive), f.answers = f.answers[0], f.answers[1:]
	return nil
}
