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
