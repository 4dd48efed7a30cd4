package locks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func newLock(t *testing.T, design, client, addr string, ttl time.Duration) Lock {
	t.Helper()
	d, err := Get(design)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.New(Env{Client: client, Nodes: []string{addr}, Key: "test:lock", TTL: ttl,
		Timeout: time.Second, Point: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// The single-node token designs share one acquire (SET NX PX + INCR) and differ in release. With
// nothing stalling, each must exclude others, hand out increasing tokens, and (except del-no-check,
// whose plain DEL is its failure mode) survive a late release by the previous holder.
func TestTokenDesignsExcludeOthersAndHandOutIncreasingTokens(t *testing.T) {
	for _, c := range []struct {
		design          string
		lateReleaseSafe bool
	}{{"set-nx-px", true}, {"get-del", true}, {"watch-multi", true}, {"del-no-check", false}} {
		t.Run(c.design, func(t *testing.T) {
			addr := redisNode(t)
			ctx := context.Background()
			a := newLock(t, c.design, "a", addr, 10*time.Second)
			b := newLock(t, c.design, "b", addr, 10*time.Second)

			t1, err := a.Acquire(ctx)
			if err != nil || t1 == nil {
				t.Fatalf("a acquire: token=%v err=%v", t1, err)
			}
			if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
				t.Fatalf("b acquire while a holds: want ErrBusy, got %v", err)
			}
			if err := a.Release(ctx); err != nil {
				t.Fatalf("a release: %v", err)
			}
			t2, err := b.Acquire(ctx)
			if err != nil || t2 == nil || *t2 <= *t1 {
				t.Fatalf("b acquire after release: token=%v (a had %d) err=%v", t2, *t1, err)
			}
			if !c.lateReleaseSafe {
				return
			}
			if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("a's second release: want ErrNotHeld, got %v", err)
			}
			if _, err := a.Acquire(ctx); !errors.Is(err, ErrBusy) {
				t.Fatalf("b's lock was freed by a's late release: %v", err)
			}
			// The client still works after its release (watch-multi: no WATCH left on the
			// connection).
			if err := b.Release(ctx); err != nil {
				t.Fatalf("b release: %v", err)
			}
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatalf("a acquire again: %v", err)
			}
		})
	}
}

func TestSetNxPxLeaseExpiresAndTheOldHolderCannotReleaseTheNewOne(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "set-nx-px", "a", addr, 150*time.Millisecond)
	b := newLock(t, "set-nx-px", "b", addr, 10*time.Second)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b could not take an expired lease: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("a releasing after expiry: want ErrNotHeld, got %v", err)
	}
}

func TestSetnxDelNeverExpiresAndAnyoneCanDeleteIt(t *testing.T) {
	addr := redisNode(t)
	ctx := context.Background()
	a := newLock(t, "setnx-del", "a", addr, 0)
	b := newLock(t, "setnx-del", "b", addr, 0)
	tok, err := a.Acquire(ctx)
	if err != nil || tok != nil {
		t.Fatalf("a acquire: token=%v err=%v (setnx-del has no token)", tok, err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := b.Acquire(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("setnx-del must never expire; b got %v", err)
	}
	// The failure mode: no owner check, so b's release deletes a's lock.
	if err := b.Release(ctx); err != nil {
		t.Fatalf("b's release of a's lock: %v", err)
	}
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("after b deleted a's lock, b should take it: %v", err)
	}
}

func TestAcquireAgainstADeadNodeIsAnUnknownOutcomeNotBusy(t *testing.T) {
	l := newLock(t, "set-nx-px", "a", "127.0.0.1:1", time.Second)
	_, err := l.Acquire(context.Background())
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("want a connection error, got %v", err)
	}
}

func TestUnknownLockNameListsTheValidOnes(t *testing.T) {
	_, err := Get("redlok")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, name := range []string{"set-nx-px", "setnx-del"} {
		if !strings.Contains(err.Error(), name) {
			t.Fatalf("error %q does not list %s", err, name)
		}
	}
}

func TestEveryDesignDescribesItself(t *testing.T) {
	for _, d := range All() {
		if d.Summary == "" || d.Source == "" || d.Token == "" || d.Nodes < 1 || len(d.FailureModes) == 0 || len(d.Scenarios) == 0 || d.New == nil {
			t.Errorf("design %s is missing part of its registry entry: %+v", d.Name, d)
		}
	}
}

// Every scenario a registry entry names must exist, and every shipped scenario's lock must list it.
func TestRegistryScenariosExist(t *testing.T) {
	listed := map[string]bool{}
	for _, d := range All() {
		for _, s := range d.Scenarios {
			listed[d.Name+" "+s] = true
			if _, err := os.Stat(filepath.Join("..", "scenarios", s+".yaml")); err != nil {
				t.Errorf("%s names scenario %s, which does not exist", d.Name, s)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "scenarios", "*.yaml"))
	debate, _ := filepath.Glob(filepath.Join("..", "scenarios", "debate", "*.yaml"))
	byol, _ := filepath.Glob(filepath.Join("..", "scenarios", "byol", "*.yaml"))
	lockLine := regexp.MustCompile(`(?m)^lock:\s*(\S+)`)
	for _, f := range append(append(files, debate...), byol...) {
		src, _ := os.ReadFile(f)
		m := lockLine.FindSubmatch(src)
		name, _ := filepath.Rel(filepath.Join("..", "scenarios"), strings.TrimSuffix(f, ".yaml"))
		if m != nil && !listed[string(m[1])+" "+name] {
			t.Errorf("scenario %s runs %s, whose registry entry does not list it", name, m[1])
		}
	}
}
