package locks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// zk-rw: readers hold together; a writer queued behind them waits for every one of them; a reader
// queued behind that writer waits for it, though the readers ahead still hold.
func TestZKRWReadersShareAWriterWaitsForAllAndReadersQueueBehindIt(t *testing.T) {
	z := zkStandalone(t, "r1", "r2", "w", "r3", "probe")
	probe := zkProbe(t, z, "probe")
	const key = "test:zk-rw"
	r1 := newZKLock(t, "zk-rw", z, "r1", key, ReadRole, 4*time.Second)
	r2 := newZKLock(t, "zk-rw", z, "r2", key, ReadRole, 4*time.Second)
	w := newZKLock(t, "zk-rw", z, "w", key, WriteRole, 4*time.Second)
	r3 := newZKLock(t, "zk-rw", z, "r3", key, ReadRole, 4*time.Second)
	if _, err := Get("zk-rw"); err != nil {
		t.Fatal(err)
	}
	if d, _ := Get("zk-rw"); !d.ReadWrite {
		t.Fatal("zk-rw must say ReadWrite")
	}
	if _, err := registry["zk-rw"].New(Env{Client: "x", Key: key}); err == nil {
		t.Fatal("zk-rw without a role must be refused")
	}
	background := context.Background()

	t1, err := zkAcquireWithin(r1, 5*time.Second)
	if err != nil {
		t.Fatalf("r1: %v", err)
	}
	t2, err := zkAcquireWithin(r2, 5*time.Second)
	if err != nil {
		t.Fatalf("r2 while r1 reads: %v", err)
	}
	if *t2 <= *t1 {
		t.Fatalf("tokens r1 %d, r2 %d", *t1, *t2)
	}

	wait := zkAcquireAsync(w, 10*time.Second)
	zkWaitFor(t, 2*time.Second, "w queued", func() bool { return len(zkChildren(t, probe, key)) == 3 })
	// A reader behind the queued writer waits, though only readers hold.
	if _, err := zkAcquireWithin(r3, 300*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("r3 behind a queued writer: want ErrBusy, got %v", err)
	}
	nodes := zkChildren(t, probe, key)
	if len(nodes) != 3 || !strings.Contains(nodes[0], "__READ__") || !strings.Contains(nodes[2], "__WRIT__") {
		t.Fatalf("nodes after r3 gave up: %v", nodes)
	}

	if err := r1.Release(background); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-wait:
		t.Fatalf("w acquired while r2 still reads: %+v", r)
	default:
	}
	released := time.Now()
	if err := r2.Release(background); err != nil {
		t.Fatal(err)
	}
	rw := <-wait
	if rw.err != nil || *rw.token <= *t2 {
		t.Fatalf("w after both readers: token=%v err=%v", rw.token, rw.err)
	}
	t.Logf("readers' tokens %d, %d; w's %d, taken %v after the last reader left", *t1, *t2, *rw.token,
		rw.at.Sub(released).Round(time.Millisecond))

	waitR3 := zkAcquireAsync(r3, 10*time.Second)
	zkWaitFor(t, 2*time.Second, "r3 queued", func() bool { return len(zkChildren(t, probe, key)) == 2 })
	time.Sleep(200 * time.Millisecond)
	select {
	case r := <-waitR3:
		t.Fatalf("r3 acquired while w writes: %+v", r)
	default:
	}
	released = time.Now()
	if err := w.Release(background); err != nil {
		t.Fatal(err)
	}
	r := <-waitR3
	if r.err != nil || *r.token <= *rw.token {
		t.Fatalf("r3 after w: token=%v err=%v", r.token, r.err)
	}
	t.Logf("r3 (token %d) read %v after w released", *r.token, r.at.Sub(released).Round(time.Millisecond))
	// Readers still share with r3.
	if _, err := zkAcquireWithin(r1, 2*time.Second); err != nil {
		t.Fatalf("r1 beside r3: %v", err)
	}
}
