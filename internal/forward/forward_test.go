package forward

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// A forwarder carries bytes both ways to what its handler dials, and Close ends the connections
// still open: the client reads EOF rather than hanging.
func TestForwardsBothWaysAndCloseEndsOpenConnections(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, func(f *Forwarder, down net.Conn) {
		up, err := net.Dial("tcp", echo.Addr().String())
		if err != nil || !f.Track(up) {
			return
		}
		defer f.Untrack(up)
		Splice(up, down)
	})
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("echoed %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: a connection was left open")
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("read after Close: %v, want EOF", err)
	}
	if !f.Closed() {
		t.Fatal("Closed is false after Close")
	}
}
