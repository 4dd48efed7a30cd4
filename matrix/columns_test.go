package matrix

import (
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/scenarios"
)

// The derived columns apply exactly to the designs with the property each needs, and say why not
// to the others.
func TestDerivedColumnsFollowTheDesignsProperties(t *testing.T) {
	cases := []struct {
		lock, fault string
		na          string // "" when the column applies
	}{
		{"redisson", "reentrant", ""},
		{"pg-advisory", "reentrant", ""},
		{"set-nx-px", "reentrant", naNotReentrant},
		{"zk-session-aware", "waiter-expires", ""},
		{"etcd", "waiter-expires", ""},
		{"redis-fair", "waiter-expires", ""},
		{"redisson", "waiter-expires", naNoQueue},
		{"db-for-update", "waiter-expires", naNoQueue},
		{"set-nx-px", "pause-overtaken", ""},
		{"zk", "pause-overtaken", ""},
		{"redlock", "pause-overtaken", naNoToken},
		{"redlock", "pause-at-point-1", ""},
		{"redlock", "pause-at-point-2", ""},
		{"set-nx-px", "pause-at-point-2", "only 1 program point(s) of its own"},
		{"zk", "pause-at-point-1", naNoPoints},
		{"redisson", "partition-long-hold", ""},
		{"zk-session-aware", "partition-long-hold", ""},
		{"mysql-get-lock", "crash-restart-long-hold", ""}, // never expires
		{"set-nx-px", "partition-long-hold", naLeaseEnds},
		{"redlock", "crash-restart-long-hold", naLeaseEnds},
		{"redlock", "crash-restart-minority", ""},
		{"etcd", "crash-restart-minority", ""},
		{"set-nx-px", "crash-restart-minority", naOneNode},
		{"zk", "crash-restart-minority", naOneNode}, // one ZooKeeper server unless a scenario asks three
	}
	for _, c := range cases {
		d, err := locks.Get(c.lock)
		if err != nil {
			t.Fatal(err)
		}
		f, err := faultNamed(c.fault)
		if err != nil {
			t.Fatal(err)
		}
		sc, na, err := cellScenario(d, f, 1)
		if na != c.na {
			t.Errorf("%s × %s: n/a %q, want %q", c.lock, c.fault, na, c.na)
		}
		if c.na == "" && (sc == nil || err != nil) {
			t.Errorf("%s × %s: no scenario: %v", c.lock, c.fault, err)
		}
	}
}

// What each derived cell asks of its run: the settings that make the fault matter.
func TestDerivedCellsShape(t *testing.T) {
	load := func(lock, fault string) *scenarios.Scenario {
		t.Helper()
		d, _ := locks.Get(lock)
		sc, err := Scenario(d, fault, 1)
		if err != nil {
			t.Fatalf("%s × %s: %v", lock, fault, err)
		}
		return sc
	}
	if sc := load("redisson", "reentrant"); !sc.Workload.Reentrant || len(sc.Nemesis) != 0 {
		t.Errorf("reentrant: want a reentrant workload and no fault, got reentrant=%v, %d faults", sc.Workload.Reentrant, len(sc.Nemesis))
	}
	// The waiter's place must go while client-1 still holds: the pause starts after client-3 has
	// queued and ends after the session is over, all within client-1's hold.
	sc := load("zk-session-aware", "waiter-expires")
	ttl, hold, stagger := sc.TTL.D(), sc.Workload.Hold.D(), sc.Workload.Stagger.D()
	if f := sc.Nemesis[0]; len(sc.Nemesis) != 1 || f.Target != "client-2" || f.At.D() != 800*time.Millisecond || f.For.D() != 2500*time.Millisecond {
		t.Fatalf("waiter-expires: unexpected nemesis: %+v", sc.Nemesis)
	}
	if at, pause := 800*time.Millisecond, 2500*time.Millisecond; at <= 2*stagger || pause <= ttl || hold <= at+pause {
		t.Errorf("waiter-expires: hold %v, stagger %v, ttl %v: the waiter's session would not run out within client-1's hold", hold, stagger, ttl)
	}
	if sc.Workload.AcquireTimeout.D() <= hold {
		t.Errorf("waiter-expires: client-3 gives up (%v) before client-1's hold ends (%v)", sc.Workload.AcquireTimeout.D(), hold)
	}
	// client-2's one attempt is still running when client-1 lets go: what the lock tells it then
	// is heard (etcd #11456's yes to a waiter whose lease went).
	if sc.Workload.AttemptBound() <= hold {
		t.Errorf("waiter-expires: client-2's attempt (%v) is no longer than client-1's hold (%v)", sc.Workload.AttemptBound(), hold)
	}
	sc = load("redisson", "partition-long-hold")
	if sc.Workload.Hold.D() <= sc.TTL.D() || sc.Workload.AcquireTimeout.D() <= sc.Workload.Hold.D() {
		t.Errorf("partition-long-hold: hold %v must outlast the ttl %v, and waiters wait longer", sc.Workload.Hold.D(), sc.TTL.D())
	}
	if f := load("redlock", "pause-at-point-2").Nemesis[0]; f.Point != "before-elapsed-check" || f.Occurrence != 1 {
		t.Errorf("pause-at-point-2 on redlock pauses at its second point: %+v", f)
	}
	if n := load("redlock", "crash-restart-minority").Nemesis; len(n) != 2 || n[0].Kind != "crash" || n[0].Target != "n1" || n[1].Target != "n2" {
		t.Errorf("crash-restart-minority on redlock crashes n1 and n2 of five: %+v", n)
	}
	if f := load("set-nx-px", "pause-overtaken").Nemesis[0]; f.Target != "overtaken" || f.Point != "after-acquire" || f.Occurrence != 1 {
		t.Errorf("pause-overtaken pauses a later hold: %+v", f)
	}
}

// A service with failover timers of its own runs its cells with them scaled to the cell's lease
// (etcd: election timeout an eighth of the 2 s lease) where a fault acts on a server, written in
// the scenario's server block and accepted by the service's own checks; its other cells and a
// service without them get no server block.
func TestCellsScaleAServicesFailoverToTheLease(t *testing.T) {
	d, err := locks.Get("etcd")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Scenario(d, "crash-restart-node", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := sc.Server.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if sc.TTL.D() != 2*time.Second || got["election_timeout"] != "250ms" || got["heartbeat"] != "25ms" {
		t.Errorf("etcd cell: ttl %s, server %v; want 2s with election_timeout 250ms, heartbeat 25ms", sc.TTL.D(), got)
	}
	if sc, err = Scenario(d, "pause-after-acquire", 1); err != nil {
		t.Fatal(err)
	}
	if sc.Server.Kind != 0 {
		t.Errorf("etcd cell whose fault acts on no server: a server block %v, want none (etcd's own timers)", sc.Server)
	}
	d, _ = locks.Get("set-nx-px")
	if sc, err = Scenario(d, "crash-restart-node", 1); err != nil {
		t.Fatal(err)
	}
	if sc.Server.Kind != 0 {
		t.Errorf("redis cell: a server block %v, want none", sc.Server)
	}
}
