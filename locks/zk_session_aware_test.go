package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// zk-session-aware's holder follows its session: cut off, it stops believing at most one session
// timeout after it last heard from the server, before the server can give the lock to another;
// once the session expired its validity is in the past for good, and its release says ErrNotHeld.
func TestZKSessionAwareHolderStopsBelievingBeforeAnotherCanHold(t *testing.T) {
	z := zkStandalone(t, "a", "b", "probe")
	probe := zkProbe(t, z, "probe")
	const key = "test:zk-session-aware-expiry"
	// 300ms is below 2 ticks: the server grants 1s, and the client must use that.
	a := newZKLock(t, "zk-session-aware", z, "a", key, "", 300*time.Millisecond)
	b := newZKLock(t, "zk-session-aware", z, "b", key, "", 4*time.Second)
	ta, err := zkAcquireWithin(a, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ea := a.(Expiring)
	timeout := a.(*zkRecipe).s.sessionTimeout()
	if timeout != time.Second {
		t.Fatalf("negotiated session timeout %v, want 1s (300ms clamped up to 2 ticks)", timeout)
	}
	if v := ea.ValidUntil(); !v.IsZero() {
		t.Fatalf("ValidUntil while connected: %v, want zero", v)
	}
	wait := zkAcquireAsync(b, 15*time.Second)
	zkWaitFor(t, 2*time.Second, "b queued", func() bool { return len(zkChildren(t, probe, key)) == 2 })

	zkCutClient(t, z, "a", true)
	cut := time.Now()
	zkWaitFor(t, time.Second, "a notices the disconnect", func() bool { return !ea.ValidUntil().IsZero() })
	until := ea.ValidUntil()
	t.Logf("a's validity ends %v after the cut (session timeout %v, pings every %v)",
		until.Sub(cut).Round(time.Millisecond), timeout, (timeout / 3).Round(time.Millisecond))
	if lead := until.Sub(cut); lead > timeout || lead < timeout/2 {
		t.Errorf("validity ends %v after the cut, want within (timeout/2, timeout]", lead)
	}

	r := <-wait
	if r.err != nil || *r.token <= *ta {
		t.Fatalf("b: token=%v (a had %d) err=%v", r.token, *ta, r.err)
	}
	t.Logf("b acquired %v after the cut, %v after a's validity ended (tokens %d > %d)",
		r.at.Sub(cut).Round(time.Millisecond), r.at.Sub(until).Round(time.Millisecond), *r.token, *ta)
	if !until.Before(r.at) {
		t.Errorf("b acquired at %v, before a's validity ended (%v): both would believe", r.at, until)
	}
	if v := ea.ValidUntil(); !time.Now().After(v) {
		t.Fatalf("after b took the lock a's validity is %v, not past", v)
	}

	zkCutClient(t, z, "a", false)
	sa := a.(*zkRecipe).s
	d := zkWaitFor(t, 10*time.Second, "a learns its session expired", func() bool { return sa.sessionEnded(a.(*zkRecipe).owner) })
	t.Logf("healed; a learned of the expiry %v later", d.Round(time.Millisecond))
	if v := ea.ValidUntil(); v.IsZero() || !time.Now().After(v) {
		t.Fatalf("after the expiry a's validity is %v, want a past time", v)
	}
	if err := a.Release(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release after expiry: want ErrNotHeld, got %v", err)
	}
	if n := zkChildren(t, probe, key); len(n) != 1 {
		t.Fatalf("nodes after a's release: %v (b's must stay)", n)
	}
	// a's client works again once go-zookeeper (after another 1s sleep) has its new session.
	zkWaitFor(t, 5*time.Second, "a's new session", func() bool { return probeSession(sa) != 0 })
	if _, err := zkAcquireWithin(a, 300*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("a acquire while b holds: want ErrBusy, got %v", err)
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := zkAcquireWithin(a, 5*time.Second); err != nil {
		t.Fatalf("a acquire after b released: %v", err)
	}
}

// A cut shorter than the session timeout is survived: validity is set while disconnected and
// back to zero once the same session resumes (a single server costs go-zookeeper a 1s sleep
// before it redials), and the release then succeeds.
func TestZKSessionAwareHolderSurvivesAShortCut(t *testing.T) {
	z := zkStandalone(t, "a")
	a := newZKLock(t, "zk-session-aware", z, "a", "test:short-cut", "", 4*time.Second)
	if _, err := zkAcquireWithin(a, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ea := a.(Expiring)
	zkCutClient(t, z, "a", true)
	cut := time.Now()
	zkWaitFor(t, time.Second, "a notices the disconnect", func() bool { return !ea.ValidUntil().IsZero() })
	until := ea.ValidUntil()
	time.Sleep(300 * time.Millisecond)
	zkCutClient(t, z, "a", false)
	d := zkWaitFor(t, 5*time.Second, "a reconnects", func() bool { return ea.ValidUntil().IsZero() })
	t.Logf("while cut a's validity ended %v after the cut; reconnected to the same session %v after the heal",
		until.Sub(cut).Round(time.Millisecond), d.Round(time.Millisecond))
	if err := a.Release(context.Background()); err != nil {
		t.Fatalf("release after a short cut: %v", err)
	}
}

// A silent partition (packets dropped, no reset): go-zookeeper notices only when its read times
// out, 2/3 of the session timeout after it last heard from the server. Validity counts from that
// last read, not from the noticed disconnect, so it still ends before another client can hold.
func TestZKSessionAwareValidityCountsFromTheLastReplyNotTheNoticedDisconnect(t *testing.T) {
	z := zkStandalone(t, "a", "b", "probe")
	probe := zkProbe(t, z, "probe")
	const key = "test:silent"
	a := newZKLock(t, "zk-session-aware", z, "a", key, "", 1500*time.Millisecond)
	b := newZKLock(t, "zk-session-aware", z, "b", key, "", 4*time.Second)
	ta, err := zkAcquireWithin(a, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ea := a.(Expiring)
	wait := zkAcquireAsync(b, 15*time.Second)
	zkWaitFor(t, 2*time.Second, "b queued", func() bool { return len(zkChildren(t, probe, key)) == 2 })
	time.Sleep(200 * time.Millisecond) // let a's last reply age a little
	link := z.Link("a", "zk1")
	for _, stream := range []string{"upstream", "downstream"} {
		if err := link.AddToxic(`{"type":"timeout","stream":"` + stream + `","attributes":{"timeout":0}}`); err != nil {
			t.Fatal(err)
		}
	}
	dropped := time.Now()
	noticed := zkWaitFor(t, 3*time.Second, "a notices", func() bool { return !ea.ValidUntil().IsZero() })
	until := ea.ValidUntil()
	r := <-wait
	if r.err != nil || *r.token <= *ta {
		t.Fatalf("b: token=%v err=%v", r.token, r.err)
	}
	t.Logf("packets dropped from t=0; a noticed at %v; its validity ended at %v; b acquired at %v",
		noticed.Round(time.Millisecond), until.Sub(dropped).Round(time.Millisecond), r.at.Sub(dropped).Round(time.Millisecond))
	if !until.Before(r.at) {
		t.Errorf("a's validity (%v) ends after b acquired (%v)", until, r.at)
	}
	if fromNoticed := dropped.Add(noticed + 1500*time.Millisecond); fromNoticed.After(r.at) {
		t.Logf("counting from the noticed disconnect (as Curator's LOST does) would end at %v, %v after b acquired",
			fromNoticed.Sub(dropped).Round(time.Millisecond), fromNoticed.Sub(r.at).Round(time.Millisecond))
	}
	if err := link.RemoveToxics(); err != nil {
		t.Fatal(err)
	}
}
