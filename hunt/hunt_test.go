package hunt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	_ "github.com/lockcheck/lockcheck/services/all" // the lock services scenarios are checked against
)

// A hunt runs on any design: a registered name, a library at a version, a design file. Its lease
// is the service's shortest where 400 ms is too short. A service that replicates by quorum runs
// three nodes, as deployed (go-zookeeper keeps a request across a reconnection only when it has
// another server to try); Redlock and redsync keep their own five. A design that is a program of its own does
// not read the worker's clock: the hunt leaves client clock steps out for it.
func TestScenarioForEveryKindOfDesign(t *testing.T) {
	adapter, _ := filepath.Abs("../adapters/redis_py_lock.py")
	file := filepath.Join(t.TempDir(), "my-lock.yaml")
	if err := os.WriteFile(file, []byte("name: my-lock\ncommand: [python3, "+adapter+"]\ntoken: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lock, design string
		ttl          time.Duration
		faults       string
		nodes        int
	}{
		{"set-nx-px", "set-nx-px", 400 * time.Millisecond, "pause,clock", 1},
		{"redlock", "redlock", 400 * time.Millisecond, "pause,clock", 5},
		{"redsync@v4.0.3", "redsync@v4.0.3", 400 * time.Millisecond, "pause", 5},
		{"zk", "zk", time.Second, "pause,clock,abandon", 3},
		{"zk@v1.0.4", "zk@v1.0.4", time.Second, "pause", 3},
		{"etcd-unchecked", "etcd-unchecked", 2 * time.Second, "pause,clock,abandon", 3},
		{"etcd-unchecked@v3.3.9", "etcd-unchecked@v3.3.9", 2 * time.Second, "pause,abandon", 3},
		{file, "my-lock", 400 * time.Millisecond, "pause", 1},
	} {
		sc, err := Scenario(Spec{Lock: c.lock, Seed: 7})
		if err != nil {
			t.Fatalf("%s: %v", c.lock, err)
		}
		r := sc.Schedule().Random
		if sc.Lock != c.design || sc.TTL.D() != c.ttl || sc.Seed != 7 || r == nil || r.Mode != nemesis.ModeHunt ||
			strings.Join(r.Faults, ",") != c.faults {
			t.Errorf("%s: lock %s, ttl %s, seed %d, package %+v", c.lock, sc.Lock, sc.TTL, sc.Seed, r)
		}
		if n := len(sc.NodeNames()); n != c.nodes {
			t.Errorf("%s: %d lock nodes, want %d", c.lock, n, c.nodes)
		}
		if text, err := sc.YAML(); err != nil || strings.Contains(string(text), "my-lock.yaml") {
			t.Errorf("%s: its YAML must stand without the design file (%v):\n%s", c.lock, err, text)
		}
	}
}

// A hunt gives a design the usage it offers: the steps of its attempts (abandon) drawn beside the
// faults, at its own points too (an answer in the client's hands, for etcd's adapter), and a
// reentrant design's holders take the lock again every hold.
func TestAHuntTriesTheUsageADesignOffers(t *testing.T) {
	sc, err := Scenario(Spec{Lock: "etcd-unchecked@v3.3.9", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := sc.Schedule().Random; !strings.Contains(strings.Join(r.Points, ","), "answered") {
		t.Errorf("the hunt of etcd's adapter must know its point answered: %v", r.Points)
	}
	if _, err := Scenario(Spec{Lock: "redsync@v4.0.3", Seed: 1, Faults: []string{"abandon"}}); err == nil ||
		!strings.Contains(err.Error(), "does not offer it") {
		t.Errorf("a program that does not give up attempts must be refused abandon, got %v", err)
	}
	for lock, want := range map[string]int{"redisson": 1, "set-nx-px": 0} {
		sc, err := Scenario(Spec{Lock: lock, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Workload.Depth(); got != want {
			t.Errorf("%s: its hunt's holders nest %d deep, want %d", lock, got, want)
		}
	}
}

// A hunt that can land a check late lets its clients wait longer than a lease for an answer, so
// that what the lock answers to a late request is heard; one that cannot keeps the default.
func TestAHuntThatDelaysWaitsForLateAnswers(t *testing.T) {
	for _, c := range []struct {
		faults []string
		want   time.Duration
	}{{[]string{"partition", "delay", "kill"}, 500 * time.Millisecond}, {[]string{"pause"}, 250 * time.Millisecond}} {
		sc, err := Scenario(Spec{Lock: "redsync@v4.0.3", Seed: 1, Faults: c.faults})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Workload.Timeout.D(); got != c.want {
			t.Errorf("%v: command timeout %s, want %s", c.faults, got, c.want)
		}
	}
}

// A waiter of a lock that blocks stays queued through the longest silence a hunt gives it: its
// attempt, less the command timeout an adapter keeps to clean up, outlasts the three other
// clients' holds (the longest waiter has waited about that long when a hold ends), the silence
// and a lease for the lock's answer.
func TestAHuntsWaiterStaysQueuedThroughItsLongestSilence(t *testing.T) {
	for _, lock := range []string{"zk", "etcd-unchecked", "zk@v1.0.4"} {
		sc, err := Scenario(Spec{Lock: lock, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		w, ttl := sc.Workload, sc.TTL.D()
		need := 3*w.Hold.D() + nemesis.LongestSilence(ttl) + ttl
		if got := w.AttemptBound() - w.Timeout.D(); got < need {
			t.Errorf("%s: an attempt leaves %s after the adapter's clean-up, want at least %s (holds %s, ttl %s)", lock, got, need, w.Hold, ttl)
		}
	}
}

func TestScenarioRefusesWhatAHuntCannotDo(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Lock: "redlok"}, `unknown lock "redlok"`},
		{Spec{Lock: "set-nx-px", Faults: []string{"crash"}}, "does not hit clients; a hunt draws from: pause, kill, clock, partition, delay"},
		{Spec{Lock: "set-nx-px", Faults: []string{"freeze"}}, `unknown fault "freeze"`},
		{Spec{Lock: "set-nx-px", Mode: "fuzz"}, `unknown mode "fuzz"`},
		{Spec{Lock: "redsync@v4.0.3", Faults: []string{"clock"}}, "does not read the worker's clock"},
	} {
		if _, err := Scenario(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}

// A design file at a version (lockcheck/x.yaml@v1.0.3) is a design file: its library is built at
// that version, and the scenario a run folder keeps writes the design in, so that judging the run
// there never looks for results-…/lockcheck/x.yaml. A relative path is taken from the current
// folder; a file that is not there fails at once, naming it.
func TestAHuntTakesADesignFileAtAVersion(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("lockcheck", 0o755); err != nil {
		t.Fatal(err)
	}
	design := "service: zookeeper\ngo: {source: zk_adapter.go, module: github.com/go-zookeeper/zk, version: v1.0.2}\n"
	if err := os.WriteFile("lockcheck/file.yaml", []byte(design), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Scenario(Spec{Lock: "lockcheck/file.yaml@v1.0.3", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	d := sc.Design()
	if sc.Lock != "file@v1.0.3" || d.Program == nil || d.Program.Go == nil || d.Program.Go.Version != "v1.0.3" ||
		d.Program.Go.Source != filepath.Join(dir, "lockcheck", "zk_adapter.go") {
		t.Fatalf("lock %s, program %+v", sc.Lock, d.Program)
	}
	if !strings.HasPrefix(sc.Name, "hunt-file-v1.0.3-") {
		t.Errorf("scenario name %s", sc.Name)
	}
	text, err := sc.RunText()
	if err != nil || strings.Contains(string(text), "file.yaml") {
		t.Fatalf("its YAML must stand without the design file (%v):\n%s", err, text)
	}
	kept := filepath.Join(dir, "results", sc.Name, "scenario.yaml") // where a run folder keeps it
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := scenarios.Load(kept); err != nil || again.Lock != "file@v1.0.3" {
		t.Errorf("the run folder's copy: %v (lock %v)", err, again)
	}

	for _, c := range []struct{ lock, want string }{
		{"lockcheck/nope.yaml@v1.0.3", "lockcheck/nope.yaml"},
		{"lockcheck/file.yaml@1.x", "lockcheck/file.yaml"},
		{"lockcheck/file.yaml@", "lockcheck/file.yaml@: no version after @"},
	} {
		if _, err := Scenario(Spec{Lock: c.lock}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", c.lock, err, c.want)
		}
	}
}

// A hunt sizes its runs to the TTL it is given, and learns a longer one from a run whose servers
// kept the lock a longer lease (to the next 100 ms); a lease near the TTL, a shorter one, or none
// teaches it nothing.
func TestAHuntLearnsTheLeaseTheServersKept(t *testing.T) {
	sc, err := Scenario(Spec{Lock: "set-nx-px", Seed: 1, TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sc.TTL.D() != 2*time.Second {
		t.Fatalf("TTL %s, want 2s", sc.TTL.D())
	}
	verdict := func(kept time.Duration, granted bool) checker.Verdict {
		return checker.Verdict{Lease: &checker.LeaseKept{Kept: kept, Granted: granted, Asked: 400 * time.Millisecond}}
	}
	for _, c := range []struct {
		v    checker.Verdict
		want time.Duration
	}{
		{verdict(1998*time.Millisecond, false), 2 * time.Second},
		{verdict(2001*time.Millisecond, true), 2100 * time.Millisecond},
		{verdict(450*time.Millisecond, false), 0},
		{verdict(100*time.Millisecond, true), 0},
		{checker.Verdict{}, 0},
	} {
		if got, ok := Learned(c.v); got != c.want || ok != (c.want > 0) {
			t.Errorf("Learned(%+v) = %s, %v; want %s", c.v.Lease, got, ok, c.want)
		}
	}
}
