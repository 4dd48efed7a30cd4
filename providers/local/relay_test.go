package local

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// freeAddr returns a 127.0.0.1 address nobody listens on (just closed).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func startRelay(t *testing.T, target string, hello func(io.Reader, string) ([]byte, error), dialFor time.Duration) *relay {
	t.Helper()
	r, err := newRelay(func() string { return target }, hello, dialFor)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

// echoOnce accepts one connection on l and echoes each line back prefixed with "echo ".
func echoOnce(l net.Listener) {
	c, err := l.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, "echo "+line); err != nil {
			return
		}
	}
}

func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, line string) (string, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line); err != nil {
		return "", err
	}
	return br.ReadString('\n')
}

// With WaitForBind, a connection to a port not bound yet waits for it, as a refused dial that the
// server retries would; the data sent meanwhile arrives.
func TestRelayWaitsForAPortThatIsNotBoundYet(t *testing.T) {
	target := freeAddr(t)
	r := startRelay(t, target, nil, 2*time.Second)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond)
	l, err := net.Listen("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echoOnce(l)
	got, err := roundTrip(t, c, bufio.NewReader(c), "hello\n")
	if err != nil || got != "echo hello\n" {
		t.Fatalf("through the relay after the port was bound 300ms late: %q, %v", got, err)
	}
}

// Without it, the connection closes at once, as a refusal would.
func TestRelayClosesAtOnceWhenThePortRefuses(t *testing.T) {
	r := startRelay(t, freeAddr(t), nil, 0)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	began := time.Now()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from a relay to a refusing port: %d bytes, %v; want EOF", n, err)
	}
	if d := time.Since(began); d > 500*time.Millisecond {
		t.Errorf("the relay took %v to close", d)
	}
}

// A port's Hello rewrites the first message (the sender's announced address becomes the
// call-back path); the rest flows unchanged both ways.
func TestRelayRewritesTheFirstMessage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echoOnce(l)
	hello := func(r io.Reader, callback string) ([]byte, error) {
		line, err := bufio.NewReader(io.LimitReader(r, int64(len("I am 127.0.0.1:1111\n")))).ReadString('\n')
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(line, "I am ") {
			return []byte(line), nil
		}
		return []byte("I am " + callback + "\n"), nil
	}
	r := startRelay(t, l.Addr().String(), hello, 0)
	r.setCallback("127.0.0.1:2222")
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if got, err := roundTrip(t, c, br, "I am 127.0.0.1:1111\n"); err != nil || got != "echo I am 127.0.0.1:2222\n" {
		t.Fatalf("first message arrived as %q, %v; want the call-back address in it", got, err)
	}
	if got, err := roundTrip(t, c, br, "I am 127.0.0.1:1111\n"); err != nil || got != "echo I am 127.0.0.1:1111\n" {
		t.Fatalf("a later message was rewritten too: %q, %v", got, err)
	}
}

// close ends the connections in flight and stops accepting.
func TestRelayCloseEndsConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echoOnce(l)
	r, err := newRelay(func() string { return l.Addr().String() }, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if got, err := roundTrip(t, c, br, "x\n"); err != nil || got != "echo x\n" {
		t.Fatalf("through the relay: %q, %v", got, err)
	}
	done := make(chan struct{})
	go func() { r.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close hangs with a connection open")
	}
	if _, err := roundTrip(t, c, br, "y\n"); err == nil {
		t.Error("a connection survived the relay's close")
	}
	if c2, err := net.DialTimeout("tcp", r.Addr(), 200*time.Millisecond); err == nil {
		c2.Close()
		t.Error("a closed relay accepts connections")
	}
}
