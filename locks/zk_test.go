package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The library's failure: a holder cut off longer than its session timeout loses its node (the
// server expires the session, the waiter takes the lock), go-zookeeper reconnects with a new
// session without a word, and the holder still believes it holds. Its Unlock deletes nothing.
func TestZKHolderIsNotToldItsSessionExpired(t *testing.T) {
	z := zkStandalone(t, "a", "b", "probe")
	probe := zkProbe(t, z, "probe")
	const key = "test:zk-expiry"
	a := newZKLock(t, "zk", z, "a", key, "", time.Second) // the shortest session a 500ms tick allows
	b := newZKLock(t, "zk", z, "b", key, "", 4*time.Second)
	if _, ok := a.(Expiring); ok {
		t.Fatal("zk must not implement Expiring: the library never tells the holder")
	}
	ta, err := zkAcquireWithin(a, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sa := a.(*zkLib).s
	sessionA := probeSession(sa)
	wait := zkAcquireAsync(b, 15*time.Second)
	zkWaitFor(t, 2*time.Second, "b queued", func() bool { return len(zkChildren(t, probe, key)) == 2 })

	zkCutClient(t, z, "a", true)
	cut := time.Now()
	r := <-wait
	if r.err != nil || *r.token <= *ta {
		t.Fatalf("b: token=%v (a had %d) err=%v", r.token, *ta, r.err)
	}
	t.Logf("a cut off; its 1s session expired and b acquired %v after the cut (token %d > %d)",
		r.at.Sub(cut).Round(time.Millisecond), *r.token, *ta)

	zkCutClient(t, z, "a", false)
	d := zkWaitFor(t, 10*time.Second, "a's client back with a new session", func() bool {
		id := probeSession(sa)
		return id != 0 && id != sessionA
	})
	t.Logf("healed; a's client silently opened a new session %v later; zk.Lock was told nothing", d.Round(time.Millisecond))
	// a still holds in its own eyes: its handle is unchanged, and an Acquire is refused as a
	// second hold, not as busy.
	if _, err := zkAcquireWithin(a, time.Second); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("a's second Acquire: want 'already holds', got %v", err)
	}
	believed := time.Since(r.at)
	// Its Unlock deletes nothing: b's node is the only one, before and after.
	if n := zkChildren(t, probe, key); len(n) != 1 {
		t.Fatalf("nodes while a still believes it holds: %v", n)
	}
	err = a.Release(context.Background())
	if !errors.Is(err, ErrNotHeld) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("a's release after expiry: want ErrNotHeld (zk: node does not exist), got %v", err)
	}
	t.Logf("a believed it held for %v after b took the lock, until it released: %v", believed.Round(time.Millisecond), err)
	if n := zkChildren(t, probe, key); len(n) != 1 {
		t.Fatalf("a's release touched b's node: %v", n)
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatalf("b release: %v", err)
	}
}

// probeSession reads the session id the connection last had.
func probeSession(s *zkSession) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != zk.StateHasSession {
		return 0
	}
	return s.session
}
