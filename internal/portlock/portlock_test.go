package portlock

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

func TestReservedPortRefusesButLetsAServerListen(t *testing.T) {
	r, err := Fresh()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Port() == 0 {
		t.Fatal("no port")
	}
	if _, err := net.Dial("tcp", r.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a reserved port: %v, want connection refused", err)
	}
	// A second reservation of a fresh port never gets this one.
	r2, err := Fresh()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.Port() == r.Port() {
		t.Fatalf("port %d reserved twice", r.Port())
	}
	// A listener binds beside the reservation, serves, and after it closes the port is still
	// reserved: a new listener gets it again, as a restarted server or a healed proxy does.
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", r.Addr())
		if err != nil {
			t.Fatalf("listen %d on a reserved port: %v", i, err)
		}
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatalf("dial the listener: %v", err)
		}
		c.Close()
		ln.Close()
		again, err := Port(r.Port())
		if err != nil {
			t.Fatalf("reserve the same port again beside the first reservation: %v", err)
		}
		again.Close()
	}
	// Outgoing connections never get a reserved port as their local port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for i := 0; i < 2000; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		local := c.LocalAddr().(*net.TCPAddr).Port
		c.Close()
		if local == r.Port() || local == r2.Port() {
			t.Fatalf("an outgoing connection got reserved port %d", local)
		}
	}
	if err := r.Close(); err != nil || r.Close() != nil {
		t.Fatalf("close: %v", err)
	}
	ln2, err := net.Listen("tcp", r.Addr())
	if err != nil {
		t.Fatalf("listen after Close: %v", err)
	}
	ln2.Close()
}
