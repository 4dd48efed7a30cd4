package scenarios

// client_locks.go: clients of one scenario running different lock designs on the same lock, as
// the services of a polyglot system share one: `lock:` is every client's design unless
// `client_locks:` names another for some, in the shape of `clocks:` (by client name):
//
//	lock: zk@v1.0.1
//	clients: 4
//	client_locks: {client-3: kazoo, client-4: kazoo}
//
// The designs must meet on one lock: the same kind of lock service, the same number of nodes, and
// the same kind of lock (a read/write lock or a mutex). Fencing tokens must be of one kind where
// there are any, since the fenced registers compare every token they are shown with the highest
// they have seen: a ZooKeeper czxid and a Redis counter are not ordered against each other. A
// design without a token may run beside one with tokens: its clients leave the fenced registers
// alone (an access without a token cannot use them), as a client without fencing leaves a
// fencing store alone.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/services"
)

// resolveClientLocks checks client_locks against the clients and the scenario's lock.
func (s *Scenario) resolveClientLocks() []*Error {
	var errs []*Error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &Error{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	s.clientDesigns = map[string]locks.Design{}
	for _, client := range slices.Sorted(maps.Keys(s.ClientLocks)) {
		field := "client_locks." + client
		name := s.ClientLocks[client]
		if !slices.Contains(s.ClientNames(), client) {
			bad(field, "no such client; this scenario has: %s", strings.Join(s.ClientNames(), ", "))
			continue
		}
		d, err := locks.Get(name)
		if err != nil {
			bad(field, "%v", err)
			continue
		}
		if !s.lockOK {
			continue // the scenario's lock has its own error
		}
		main := s.design
		switch {
		case d.ServiceName() != main.ServiceName():
			bad(
				field,
				"%s runs on %s, the scenario's lock %s on %s: clients share a lock only on one service",
				name,
				d.ServiceName(),
				s.Lock,
				main.ServiceName(),
			)
		case d.Nodes != main.Nodes:
			bad(field, "%s uses %d node(s), the scenario's lock %s %d: they would not take the same lock", name, d.Nodes, s.Lock, main.Nodes)
		case d.ReadWrite != main.ReadWrite:
			bad(field, "%s and the scenario's lock %s are not both read/write locks (or both mutexes)", name, s.Lock)
		case d.HasToken() && main.HasToken() && d.Token != main.Token:
			bad(
				field,
				"%s's fencing token (%s) is not of the kind of %s's (%s): the fenced registers cannot order them",
				name,
				d.Token,
				s.Lock,
				main.Token,
			)
		case s.Workload.Reentrant && !d.Reentrant:
			bad(field, "%s is not reentrant (workload.reentrant)", name)
		case notOffered(d, s.Workload.Steps()) != "":
			bad(field, "%s (workload.usage)", notOffered(d, s.Workload.Steps()))
		case d.Expires && s.TTL == 0:
			bad(field, "%s is a lease: give the scenario a ttl", name)
		default:
			// The service must take this design as it is set up for the scenario's own (a
			// program of its own cannot follow Sentinel, say): its kind says so.
			spec := s.Spec()
			spec.Design = d
			ok := true
			services.PlanFor(spec, func(f, format string, a ...any) {
				ok = false
				bad(field, "%s (%s): %s", name, f, fmt.Sprintf(format, a...))
			})
			if ok {
				s.clientDesigns[client] = d
			}
		}
	}
	// Every token among the clients must be of one kind, the main design's aside.
	var token, first string
	for _, client := range slices.Sorted(maps.Keys(s.clientDesigns)) {
		d := s.clientDesigns[client]
		switch {
		case !d.HasToken():
		case token == "":
			token, first = d.Token, d.Name
		case d.Token != token:
			bad(
				"client_locks."+client,
				"%s's fencing token (%s) is not of the kind of %s's (%s): the fenced registers cannot order them",
				d.Name,
				d.Token,
				first,
				token,
			)
		}
	}
	return errs
}

// LockOf is the name of the design client runs.
func (s *Scenario) LockOf(client string) string { return s.DesignOf(client).Name }

// DesignOf is the design client runs.
func (s *Scenario) DesignOf(client string) locks.Design {
	if d, ok := s.clientDesigns[client]; ok {
		return d
	}
	return s.design
}

// Mixed reports whether some client runs another design than the scenario's lock.
func (s *Scenario) Mixed() bool {
	for _, d := range s.clientDesigns {
		if d.Name != s.Lock {
			return true
		}
	}
	return false
}

// Designs lists the designs the clients run, the scenario's lock first.
func (s *Scenario) Designs() []locks.Design {
	out := []locks.Design{s.design}
	for _, c := range s.ClientNames() {
		d := s.DesignOf(c)
		if !slices.ContainsFunc(out, func(o locks.Design) bool { return o.Name == d.Name }) {
			out = append(out, d)
		}
	}
	return out
}

// ClientLockNames is each client's design when they differ (nil when every client runs the
// scenario's lock): what a run's verdict.json records.
func (s *Scenario) ClientLockNames() map[string]string {
	if !s.Mixed() {
		return nil
	}
	out := map[string]string{}
	for _, c := range s.ClientNames() {
		out[c] = s.LockOf(c)
	}
	return out
}

// LockDescription names the lock for people: the design, or each design with its clients
// ("zk@v1.0.1 (client-1, client-2) + kazoo (client-3, client-4)").
func (s *Scenario) LockDescription() string {
	if !s.Mixed() {
		return s.Lock
	}
	byDesign := map[string][]string{}
	for _, c := range s.ClientNames() {
		byDesign[s.LockOf(c)] = append(byDesign[s.LockOf(c)], c)
	}
	var parts []string
	for _, d := range s.Designs() {
		parts = append(parts, fmt.Sprintf("%s (%s)", d.Name, strings.Join(byDesign[d.Name], ", ")))
	}
	return strings.Join(parts, " + ")
}

// Prepare readies this machine for a run, before any server starts: an external lock's program
// must be there (CheckProgram), and every design's Prepare runs (a library at a version is built
// on first use). Errors say what is missing in one line.
func (s *Scenario) Prepare() error {
	if err := s.CheckProgram(); err != nil {
		return err
	}
	for _, d := range s.Designs() {
		if d.Prepare != nil {
			if err := d.Prepare(); err != nil {
				return err
			}
		}
	}
	return nil
}

// notOffered says why d cannot take one of steps, or "".
func notOffered(d locks.Design, steps []string) string {
	for _, step := range steps {
		if why := d.NotOffered(step); why != "" {
			return why
		}
	}
	return ""
}
