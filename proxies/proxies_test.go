package proxies

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echo serves lines back until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil && line != "ping\n" {
		err = errors.New("echo answered " + line)
	}
	return err
}

func TestCutRefusesAndClosesHealServesOnTheSamePort(t *testing.T) {
	s := New()
	defer s.Stop()
	l, err := s.Add("client-1", "n1", "", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the link: %v", err)
	}
	if err := s.CutBetween("n1", "client-1"); err != nil {
		t.Fatal(err)
	}
	if !l.IsCut() {
		t.Fatal("IsCut false after a cut")
	}
	if err := roundTrip(c); err == nil {
		t.Fatal("a connection made before the cut still works")
	}
	if _, err := net.Dial("tcp", l.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a cut link: %v, want connection refused", err)
	}
	// Many outgoing connections while cut (each takes an ephemeral port) must not keep the heal
	// from binding the link's port again.
	churn := echo(t)
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", churn); err == nil {
			c.Close()
		}
	}
	if err := s.HealBetween("client-1", "n1"); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatalf("dial after heal: %v", err)
	}
	defer c2.Close()
	if err := roundTrip(c2); err != nil {
		t.Fatalf("through the healed link: %v", err)
	}
	if s.Stop() != nil || s.Stop() != nil {
		t.Fatal("Stop failed")
	}
	if err := l.Heal(); err == nil {
		t.Fatal("heal after Stop succeeded")
	}
	// Stop gives the port back.
	ln, err := net.Listen("tcp", l.Addr())
	if err != nil {
		t.Fatalf("port still held after Stop: %v", err)
	}
	ln.Close()
}

func TestLinksAreNamedAndFoundByEnds(t *testing.T) {
	s := New()
	defer s.Stop()
	up := echo(t)
	for _, e := range [][3]string{{"client-1", "zk1", "client"}, {"zk1", "zk2", "quorum"}, {"zk2", "zk1", "quorum"}} {
		if _, err := s.Add(e[0], e[1], e[2], up); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Add("zk1", "zk2", "quorum", up); err == nil {
		t.Fatal("a second link zk1->zk2 quorum was added")
	}
	if l := s.Link("zk1", "zk2", "quorum"); l == nil || l.Name() != "zk1->zk2 quorum" {
		t.Fatalf("Link = %v", l)
	}
	if got := len(s.Between("zk2", "zk1")); got != 2 {
		t.Fatalf("Between = %d links, want 2", got)
	}
	if got := s.Peers("zk1"); len(got) != 2 || got[0] != "client-1" || got[1] != "zk2" {
		t.Fatalf("Peers(zk1) = %v", got)
	}
	if err := s.CutBetween("client-1", "zk2"); err == nil {
		t.Fatal("cut between unlinked ends succeeded")
	}
}

// A dropped link keeps its connections: a read waits for its deadline (no reset, no EOF), a new
// connection is accepted and gets nothing back either, and what was sent meanwhile arrives, in
// order, after the heal.
func TestDropHoldsUntilHealThenDelivers(t *testing.T) {
	s := New()
	defer s.Stop()
	l, err := s.Add("client-1", "n1", "", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the link: %v", err)
	}
	if err := s.DropBetween("n1", "client-1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Drop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if !l.IsDropped() || l.IsCut() {
		t.Fatalf("dropped %v, cut %v: want dropped, not cut", l.IsDropped(), l.IsCut())
	}
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.WriteString(c, "one\ntwo\n"); err != nil {
		t.Fatalf("a write into a dropping link fails at once: %v", err)
	}
	line, err := r.ReadString('\n')
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a dropping link: %q, %v; want a timeout", line, err)
	}
	fresh, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatalf("a new connection to a dropping link: %v; want accepted", err)
	}
	defer fresh.Close()
	if err := roundTrip(fresh); err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("new connection's round trip: %v; want a timeout", err)
	}

	if err := s.HealBetween("client-1", "n1"); err != nil {
		t.Fatal(err)
	}
	if l.IsDropped() {
		t.Fatal("still dropped after the heal")
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	for _, want := range []string{"one\n", "two\n"} {
		if line, err := r.ReadString('\n'); err != nil || line != want {
			t.Fatalf("after the heal: %q, %v; want %q (held, then delivered)", line, err, want)
		}
	}
	if err := roundTrip(c); err != nil {
		t.Fatalf("the same connection after the heal: %v", err)
	}
}

// A cut, unlike a drop, ends the connection at once: the read fails before its deadline.
func TestCutFailsAReadAtOnceWhereDropHangs(t *testing.T) {
	s := New()
	defer s.Stop()
	l, err := s.Add("client-1", "n1", "", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := l.Cut(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.WriteString(c, "ping\n")
	_, err = bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) || time.Since(began) > time.Second {
		t.Fatalf("read through a cut link: %v after %v; want EOF or a reset at once", err, time.Since(began))
	}
}
