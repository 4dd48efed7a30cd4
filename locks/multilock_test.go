package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMultilockNeedsEveryNodeAndExcludesOthers(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	a := n5Lock(t, c, "multilock", "a", 10*time.Second, nil)
	b := n5Lock(t, c, "multilock", "b", 10*time.Second, nil)
	if _, ok := a.(Expiring); ok {
		t.Fatal("multilock computes no validity (Redisson has none): it must not implement Expiring")
	}
	tok, err := a.Acquire(ctx)
	if err != nil || tok != nil {
		t.Fatalf("a acquire: token=%v err=%v", tok, err)
	}
	if got := n5Keys(t, c); got != "11111" {
		t.Fatalf("keys: %s, want 11111", got)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("b while a holds: want ErrBusy, got %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("a release: %v", err)
	}
	if got := n5Keys(t, c); got != "00000" {
		t.Fatalf("keys after release: %s, want 00000", got)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b after release: %v", err)
	}
}

func TestMultilockRefusesWithOneOfFiveUnavailableAndReleasesWhatItTook(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	n5Kill(t, c, 4) // the last node: a takes n1..n4 first
	a := n5Lock(t, c, "multilock", "a", 10*time.Second, nil)
	_, err := a.Acquire(ctx)
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("one node dead: want an unknown-outcome error, got %v", err)
	}
	if got := n5Keys(t, c); got != "0000?" {
		t.Fatalf("a must give back n1..n4 (their keys had 10 s to live): keys %s, want 0000?", got)
	}

	// A frozen node in the middle: its SET times out; a gives back n1, n2 and never touches n4, n5.
	c2 := n5Cluster(t, "a")
	n5Stop(t, c2, 2)
	a2 := n5Lock(t, c2, "multilock", "a", 10*time.Second, nil)
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := a2.Acquire(tctx); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("one node frozen: want an unknown-outcome error, got %v", err)
	}
	if got := n5Keys(t, c2); got != "00?00" {
		t.Fatalf("keys %s, want 00?00", got)
	}
}

func TestMultilockIsBusyWhenAnyNodeIsTaken(t *testing.T) {
	c := n5Cluster(t, "a")
	ctx := n5Ctx(t)
	n5SetForeign(t, c, 2, 10*time.Second) // someone else holds n3 only
	a := n5Lock(t, c, "multilock", "a", 10*time.Second, nil)
	if _, err := a.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("n3 taken: want ErrBusy, got %v", err)
	}
	if got := n5Keys(t, c); got != "00100" {
		t.Fatalf("a must give back n1, n2 and stop at n3: keys %s, want 00100", got)
	}
}

// The characteristic failure: nothing tells a holder its lease is over. Paused past the TTL it
// still "holds"; another client takes every node; only its release finds out.
func TestMultilockHolderPausedPastTheTTLIsNeverTold(t *testing.T) {
	c := n5Cluster(t, "a", "b")
	ctx := n5Ctx(t)
	a := n5Lock(t, c, "multilock", "a", 200*time.Millisecond, nil)
	b := n5Lock(t, c, "multilock", "b", 10*time.Second, nil)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b must get the expired lock: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a's release after expiry: want ErrNotHeld, got %v", err)
	}
	if got := n5Keys(t, c); got != "11111" {
		t.Fatalf("a's late release touched b's keys: %s", got)
	}
}
