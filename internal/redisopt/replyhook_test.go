package redisopt

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

func TestCommandIsMatchesTheRequestsName(t *testing.T) {
	set := []byte("$3\r\nset\r\n")
	for req, want := range map[string]bool{
		"*6\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\npx\r\n$3\r\n400\r\n$2\r\nnx\r\n": true,
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n":                                      true,
		"*2\r\n$5\r\nhello\r\n$1\r\n2\r\n":                                               false, // the handshake on a new connection
		"*3\r\n$6\r\nsetnx2\r\n$1\r\nk\r\n$1\r\nv\r\n":                                   false,
		"*2\r\n$3\r\nget\r\n$3\r\nset\r\n":                                               false, // "set" as an argument
		"":                                                                               false,
	} {
		if got := commandIs([]byte(req), set); got != want {
			t.Errorf("commandIs(%q) = %v, want %v", req, got, want)
		}
	}
}

func TestHookRunsOnceAndOnlyForTheArmedCommand(t *testing.T) {
	h := &ReplyHook{}
	runs := 0
	h.Arm("SET", func() time.Duration { runs++; return 0 })
	if fn := h.wrote([]byte("*2\r\n$5\r\nhello\r\n$1\r\n2\r\n")); fn != nil {
		t.Fatal("the hook took HELLO for SET")
	}
	fn := h.wrote([]byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n"))
	if fn == nil {
		t.Fatal("the hook missed the armed SET")
	}
	fn()
	if again := h.wrote([]byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n")); again != nil || runs != 1 {
		t.Fatalf("the hook ran twice for one arming (runs %d)", runs)
	}
	h.Arm("set", func() time.Duration { runs++; return 0 })
	h.Disarm()
	if fn := h.wrote([]byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n")); fn != nil {
		t.Fatal("a disarmed hook still ran")
	}
}

// A client stopped at the hook past its read's deadline times out, though its reply waits: the
// connection below reads whatever its deadline (a Go runtime that, on waking, ran the read before
// the deadline's timer); one that came back in time reads the reply.
func TestAReadWhoseDeadlinePassedAtTheHookTimesOut(t *testing.T) {
	for _, c := range []struct {
		stopped, deadline time.Duration
		want              error
	}{{60 * time.Millisecond, 30 * time.Millisecond, os.ErrDeadlineExceeded}, {0, 5 * time.Second, nil}} {
		h := &ReplyHook{}
		conn := &hookedConn{Conn: replyWaiting{}, hook: h}
		h.Arm("set", func() time.Duration { time.Sleep(c.stopped); return 0 })
		if _, err := conn.Write([]byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(c.deadline))
		if _, err := conn.Read(make([]byte, 16)); !errors.Is(err, c.want) {
			t.Errorf("stopped %s at the hook, deadline %s: read error %v, want %v", c.stopped, c.deadline, err, c.want)
		}
	}
}

// replyWaiting is a connection whose reply is already there: every read returns it, deadline or
// not.
type replyWaiting struct{ net.Conn }

func (replyWaiting) Write(p []byte) (int, error)     { return len(p), nil }
func (replyWaiting) Read(p []byte) (int, error)      { return copy(p, "+OK\r\n"), nil }
func (replyWaiting) SetReadDeadline(time.Time) error { return nil }
