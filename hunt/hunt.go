// Package hunt builds the scenarios that hunt a lock design for violations: a short-lease
// workload of four clients under one seeded random package, in hunt mode (faults aimed at the
// holder, a waiter, the overtaken, at the moments they can matter: nemesis/hunt.go) or in
// Jepsen's random mode, for comparison. `lockcheck hunt` runs them seed after seed; the lockhunt
// tool measures how soon each mode finds a violation.
package hunt

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/scenarios"
	"github.com/lockcheck/lockcheck/services"
)

// Spec is one hunt: a design (by name, or by a design file), the fault kinds its package draws,
// the mode, the seed and how long the run may last.
type Spec struct {
	// Lock is a registered design's name (set-nx-px, redsync@v4.0.3) or a design file (x.yaml, or
	// x.yaml@v1.2.3 to build its go: section's library at that version), from the current folder.
	Lock   string
	Faults []string // kinds the package draws (default DefaultFaults)
	Mode   string   // nemesis.ModeHunt (default) or nemesis.ModeRandom
	Seed   int64
	Within time.Duration // the run's length (default 30s)
	// Server is the lock service's settings, as a scenario's server: block writes them
	// ("{version: 3.4.3}": etcd's lock RPC on the server release that shipped its bug).
	Server string
	// TTL is the lease the lock is given and the faults are sized to; 0: 400 ms. The service's
	// shortest lease is the least either way.
	TTL time.Duration
}

// DefaultFaults are the families a hunt draws when not told: freezing the holder past its lease
// or session (K2, K3 in docs/CLAIMS.md) and stepping a client's clock, which breaks designs that
// read time on the client (getset). Cuts and delays of a client's links do not lengthen a hold,
// so with the short holds of a hunt they find nothing (docs/HUNTING.md).
var DefaultFaults = []string{history.Pause, history.Clock}

// Clients is how many clients a hunt runs.
const Clients = 4

// Scenario builds the hunt's scenario: four clients on a short lease (400 ms, or the service's
// shortest), a replicated service's usual ensemble (three ZooKeeper or etcd nodes), 50 ms holds
// and 10 ms think, and one package of the listed kinds. Clock steps are drawn up to ±5 TTLs,
// delays up to 2 TTLs. Random mode draws any client every 1.5 TTLs on average, for 0.5–2.5 TTLs
// (the shape of scenarios/debate/k2-random-pauses-set-nx-px.yaml); hunt mode uses its defaults
// (every 2 TTLs, 1.2–3 TTLs, aimed by the lock's state).
func Scenario(s Spec) (*scenarios.Scenario, error) {
	spec, name, err := lockSpec(s.Lock)
	if err != nil {
		return nil, err
	}
	offered, err := offeredSteps(spec, s.Lock)
	if err != nil {
		return nil, err
	}
	if len(s.Faults) == 0 {
		// The default families and, for a design whose attempt waits (a blocking acquire: there
		// is a moment inside it for a caller to give up), every aimed usage step it offers: how
		// programs use a lock is hunted beside what the world does to it. A try-lock's attempt is
		// one command; giving it up is a timeout, which the faults already make.
		s.Faults = slices.Clone(DefaultFaults)
		if d, err := designOf(spec); err == nil && d.Blocking != "" {
			s.Faults = append(s.Faults, offered...)
		}
	}
	if s.Mode == "" {
		s.Mode = nemesis.ModeHunt
	}
	if s.Within <= 0 {
		s.Within = 30 * time.Second
	}
	for _, f := range s.Faults {
		k, err := nemesis.Lookup(f)
		if err != nil {
			return nil, err
		}
		if k.Step && !slices.Contains(offered, f) {
			return nil, fmt.Errorf("usage step %q: %s does not offer it (it offers: %s)", f, s.Lock, orNone(offered))
		}
		if k.Suits == nil || !k.Step && !k.Suits(nemesis.TargetInfo{Name: "client-1", Client: true}) {
			return nil, fmt.Errorf("fault %q does not hit clients; a hunt draws from: %s", f, strings.Join(ClientKinds(), ", "))
		}
	}
	if s.Faults, err = suited(spec, s.Lock, s.Faults); err != nil {
		return nil, err
	}
	pkg := &nemesis.Random{Mode: nemesis.ModeHunt, Faults: slices.Clone(s.Faults)}
	switch s.Mode {
	case nemesis.ModeHunt:
	case nemesis.ModeRandom:
		var clients []string
		for i := 1; i <= Clients; i++ {
			clients = append(clients, history.Client(i))
		}
		pkg = &nemesis.Random{Faults: slices.Clone(s.Faults), Targets: clients,
			Interval: scenarios.TTLs(1.5), MinFor: scenarios.TTLs(0.5), MaxFor: scenarios.TTLs(2.5)}
	default:
		return nil, fmt.Errorf("unknown mode %q; valid modes: %s", s.Mode, strings.Join(nemesis.Modes, ", "))
	}
	if slices.Contains(s.Faults, history.Clock) {
		pkg.MaxOffset = scenarios.TTLs(5)
	}
	if slices.Contains(s.Faults, history.Delay) {
		pkg.MaxLatency = scenarios.TTLs(2)
	}
	ms := func(n int) scenarios.Duration { return scenarios.Duration(time.Duration(n) * time.Millisecond) }
	workload := scenarios.Workload{Hold: ms(50), Think: ms(10), Stagger: ms(50), AcquireTimeout: ms(3000)}
	if d, err := designOf(spec); err == nil && d.Offers(locks.UsageReenter) {
		// Every hold of a reentrant design takes the lock again right after its acquire, where a
		// pause at after-acquire leaves it: a re-entry after the lease ran out is tried.
		workload.Usage.Reenter = 1
	}
	full := fmt.Sprintf("hunt-%s-%s-%s", name, strings.Join(s.Faults, "-"), s.Mode)
	sc := scenarios.Scenario{
		Name: full, Path: full + ".yaml", Comment: "hunt: " + name + " × " + strings.Join(s.Faults, ", ") + ", " + s.Mode,
		LockSpec: spec, Clients: Clients, Seed: s.Seed, Duration: scenarios.Duration(s.Within),
		Workload: workload,
		Nemesis:  []scenarios.Entry{{Random: pkg}},
	}
	if s.Server != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(s.Server), &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("--server %q: write the service's settings as a scenario's server: block does, e.g. \"{version: 3.4.3}\"",
				s.Server)
		}
		sc.Server = *doc.Content[0]
	}
	if spec.File != "" { // the scenario sits beside the design file (spec.File is absolute)
		sc.Path = filepath.Join(filepath.Dir(spec.File), sc.Path)
	}
	// The lease: 400 ms, or the service's shortest (ZooKeeper: 1 s sessions; etcd: 2 s leases).
	d, err := scenarios.DesignNamed(sc.LockSpec, sc.Path)
	if err != nil {
		return nil, err
	}
	if n := services.DeployedNodes(d.ServiceName()); n > 0 && d.Nodes <= 1 {
		// A replicated service as it is deployed (services.Quorum): its clients' libraries
		// fail over between nodes, and a cut may leave them a minority.
		sc.Nodes = n
	}
	plan, err := services.MustPlan(services.Spec{Design: d, Nodes: sc.Nodes})
	if err != nil {
		return nil, err
	}
	ttl := max(cmp.Or(s.TTL, 400*time.Millisecond), plan.MinTTL)
	sc.TTL = scenarios.Duration(ttl)
	if d.Renews {
		// A design that renews holds past its lease by right. Holds longer than the lease and the
		// servers' slack let a waiter frozen past its own lease see the holder let go only after
		// its lease died: the shape in which a lock that answers a dead waiter shows it broke its
		// promise (etcd #11456), where a short hold lets the waiter go first, rightly, and learn it
		// late.
		hold := ttl + time.Duration(d.PromiseRule(locks.Env{TTL: ttl}).Slack) + ttl/2
		sc.Workload.Hold = scenarios.Duration(hold)
		sc.Workload.AcquireTimeout = scenarios.Duration(max(3*time.Second, 4*hold+ttl))
		if s.Mode == nemesis.ModeHunt { // fewer, longer holds: a fault every TTL rather than every two
			pkg.Interval = scenarios.TTLs(1)
		}
		if d.Blocking != "" {
			// A waiter stays queued through the longest silence a hunt gives it: one attempt
			// outlasts the wait behind the three other clients' holds (the longest waiter, silenced
			// as a hold ends, has waited about that long), the silence (up to 3.5 TTLs, through a
			// release), a lease for the lock's answer on waking, and the command timeout an adapter
			// keeps to clean up. A shorter attempt ends during the silence: on waking the client
			// gives up, and what the lock would have told it is never heard (go-zookeeper's waiter
			// whose session expired: all 3 such freezes seen in a 5-minute hunt ended so).
			sc.Workload.Timeout = scenarios.Duration((4*hold + ttl) / 4)
			attempt := 3*hold + nemesis.LongestSilence(ttl) + ttl + sc.Workload.Timeout.D()
			sc.Workload.Attempt = scenarios.Duration(attempt)
			sc.Workload.AcquireTimeout = scenarios.Duration(max(sc.Workload.AcquireTimeout.D(), attempt+hold))
		}
	}
	if landsLate(s.Faults) {
		// A client waits for an answer a little longer than its lease, as real ones do (go-redis
		// waits 3 s by default): a check that a delay lands after the lease is then answered,
		// and what the lock answers is seen, rather than abandoned at the 250 ms default.
		sc.Workload.Timeout = max(sc.Workload.Timeout, scenarios.Duration(ttl+ttl/4))
	}
	return scenarios.New(sc)
}

// Learned is the TTL a hunt sizes its next runs to after a run whose servers kept a lease longer
// than the TTL the lock was given (a library that rounds its lease up to whole seconds, or asks
// for one of its own): the kept lease, to the next 100 ms. ok is false when the lease agreed
// with the TTL, was shorter, or the service keeps none.
func Learned(v checker.Verdict) (time.Duration, bool) {
	l := v.Lease
	if l == nil || !l.Differs() || l.Kept < l.Asked {
		return 0, false
	}
	return (l.Kept + 99*time.Millisecond).Truncate(100 * time.Millisecond), true
}

// offeredSteps lists the aimed usage steps (nemesis kinds a client takes itself) the design
// offers.
func offeredSteps(spec scenarios.LockSpec, lock string) ([]string, error) {
	d, err := designOf(spec)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range nemesis.Kinds() {
		if k.Step && d.Offers(k.Name) {
			out = append(out, k.Name)
		}
	}
	return out, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// designOf is the design a hunt's lock names (a design file's path is absolute: lockSpec).
func designOf(spec scenarios.LockSpec) (locks.Design, error) {
	return scenarios.DesignNamed(spec, "hunt.yaml")
}

// landsLate reports whether one of faults can land a holder's request after its lease.
func landsLate(faults []string) bool {
	for _, f := range faults {
		if k, err := nemesis.Lookup(f); err == nil && k.LandsLate {
			return true
		}
	}
	return false
}

// suited leaves out of faults a client's clock step when the design is a program of its own (a
// library at a version, a design file): the step sets the worker's clock, which the program does
// not read, so it would spend the hunt's budget on nothing. It errs if nothing is left.
func suited(spec scenarios.LockSpec, lock string, faults []string) ([]string, error) {
	d, err := designOf(spec)
	if err != nil || !d.External || !slices.Contains(faults, history.Clock) {
		return faults, err
	}
	out := slices.DeleteFunc(slices.Clone(faults), func(f string) bool { return f == history.Clock })
	if len(out) == 0 {
		return nil, fmt.Errorf("%s runs as a program of its own, which does not read the worker's clock: a client's clock step "+
			"cannot reach it; hunt it with other faults (%s)", lock, strings.Join(ClientKinds(), ", "))
	}
	return out, nil
}

// lockSpec is how a hunt's scenario names its design, and a short name for the scenario's.
func lockSpec(lock string) (scenarios.LockSpec, string, error) {
	if lock == "" {
		return scenarios.LockSpec{}, "", fmt.Errorf("no lock given; lockcheck list shows the designs")
	}
	if _, _, ok := locks.DesignFileName(lock); ok {
		spec, err := scenarios.DesignFileSpec(lock)
		if err != nil {
			return scenarios.LockSpec{}, "", err
		}
		name := strings.TrimSuffix(filepath.Base(spec.File), filepath.Ext(spec.File))
		if spec.Version != "" {
			name += "-" + spec.Version
		}
		return spec, name, nil
	}
	if _, err := locks.Get(lock); err != nil {
		return scenarios.LockSpec{}, "", err
	}
	return scenarios.LockSpec{Name: lock}, strings.ReplaceAll(lock, "@", "-"), nil
}

// ClientKinds lists the fault kinds a hunt may draw: those a random package aims at clients.
func ClientKinds() []string {
	var out []string
	for _, k := range nemesis.Kinds() {
		if k.Suits != nil && k.Suits(nemesis.TargetInfo{Name: "client-1", Client: true}) {
			out = append(out, k.Name)
		}
	}
	return out
}

// What a hunt looks for (--find), as the class of double ownership a run must show, or more
// serious: a broken promise (the default: a bug of the lock's own), double ownership a fault on
// the servers explains (a weakness of the design), or any double ownership at all (a holder that
// outlived its promise, K2, included).
const (
	FindBroken    = checker.ClassBroken
	FindExplained = checker.ClassExplained
	FindAny       = checker.WindowClass("")
)

// Finds are the values --find takes, most serious first.
var Finds = []string{string(FindBroken), string(FindExplained), "any"}

// ParseFind reads a --find value.
func ParseFind(s string) (checker.WindowClass, error) {
	switch s {
	case string(FindBroken), string(FindExplained):
		return checker.WindowClass(s), nil
	case "any":
		return FindAny, nil
	}
	return "", fmt.Errorf("--find %q: valid finds: %s", s, strings.Join(Finds, ", "))
}

// FindWords names a find for messages: "broken promises", "any double ownership".
func FindWords(find checker.WindowClass) string {
	switch find {
	case FindBroken:
		return "broken promises"
	case FindExplained:
		return "double ownership a fault on the servers explains, or worse"
	}
	return "any double ownership"
}

// Found reports whether a run's verdict shows find: a window of double ownership of that class or
// a more serious one (of any class, for FindAny). Fencing may still have kept the data (rescued),
// which the finding's outcome says.
func Found(v checker.Verdict, find checker.WindowClass) bool {
	_, ok := FirstViolation(v, find)
	return ok
}

// FirstViolation is the offset from the run's start of the earliest window that shows find.
func FirstViolation(v checker.Verdict, find checker.WindowClass) (time.Duration, bool) {
	found, first := false, time.Duration(0)
	for _, w := range v.MutualExclusion.Windows {
		if find != FindAny && w.Class != find && !w.Class.Worse(find) {
			continue
		}
		if !found || w.Offset < first {
			found, first = true, w.Offset
		}
	}
	return first, found
}
