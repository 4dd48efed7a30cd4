package nemesis

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/lockcheck/lockcheck/history"
)

// Targets that follow the lock's state: a fault naming one hits whichever client is in that state
// when the fault starts (or, at a program point, the first client to pass it in that state).
const (
	Holder    = "holder"    // holds the lock
	Waiter    = "waiter"    // is trying to take the lock while another client holds it
	Overtaken = "overtaken" // holds the lock again after a later holder took it from under it
)

// ClientRoles describes the state-following targets, in the order errors list them.
var ClientRoles = []TargetInfo{
	{Name: Holder, Client: true, Role: "whichever client holds the lock when the fault starts"},
	{Name: Waiter, Client: true, Role: "a client trying to take the lock while another holds it"},
	{Name: Overtaken, Client: true, Role: "a client holding the lock again after another client took it since its previous hold"},
}

// ClientRole returns the state-following target called name.
func ClientRole(name string) (TargetInfo, bool) {
	for _, r := range ClientRoles {
		if r.Name == name {
			return r, true
		}
	}
	return TargetInfo{}, false
}

// IsClientRole reports whether name is a state-following target.
func IsClientRole(name string) bool { _, ok := ClientRole(name); return ok }

// RoleNames lists the state-following targets.
func RoleNames() []string {
	out := make([]string, len(ClientRoles))
	for i, r := range ClientRoles {
		out[i] = r.Name
	}
	return out
}

// LockState follows who holds and who waits for the lock, from the history as it is appended:
// the same events the checker judges, so a fault's target is what the history shows at its start.
// A client holds from its acquire's ok until it invokes a release, notes that it lost the lock,
// or dies; it waits from an acquire's invoke until its completion.
type LockState struct {
	mu      sync.Mutex
	tick    int64            // orders acquisitions and attempts
	holds   map[string]int64 // client -> tick of its current acquisition
	release map[string]bool  // client -> its release is in flight (it still holds at a point inside it)
	waits   map[string]int64 // client -> tick of its pending acquire's invoke
	held    map[string]bool  // client -> it held the lock at some time
	// passed: client -> another client acquired since this client's latest acquisition began.
	passed    map[string]bool
	overtaken map[string]bool // client -> its current hold came after another's since its previous one
	// spans are each client's latest holds by the events' own times: workers' events arrive by
	// separate pipes, so one client's release may arrive after the next holder's acquire though
	// it happened before; Overlapping judges by the times.
	spans   map[string][]span
	reads   map[string]int // client -> reads of the resource it completed (a delay may last until another's)
	changed chan struct{}  // closed and replaced at each change
}

// span is a hold from its acquire's ok to its end (0: not ended yet), in CLOCK_MONOTONIC ns.
type span struct{ start, end int64 }

// keptSpans is how many of each client's latest holds Overlapping looks at.
const keptSpans = 4

// NewLockState starts with nobody holding or waiting.
func NewLockState() *LockState {
	return &LockState{holds: map[string]int64{}, release: map[string]bool{}, waits: map[string]int64{},
		held: map[string]bool{}, passed: map[string]bool{}, overtaken: map[string]bool{}, spans: map[string][]span{},
		reads: map[string]int{}, changed: make(chan struct{})}
}

// Observe takes one event of the history into account.
func (s *LockState) Observe(e history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := e.Process
	switch {
	case e.F == history.Acquire && e.Type == history.Invoke:
		s.tick++
		s.waits[c] = s.tick
	case e.F == history.Acquire && e.Type == history.OK:
		delete(s.waits, c)
		s.tick++
		s.holds[c] = s.tick
		delete(s.release, c)
		s.overtaken[c] = s.held[c] && s.passed[c]
		for o := range s.held {
			if o != c {
				s.passed[o] = true
			}
		}
		s.held[c], s.passed[c] = true, false
		sp := append(s.spans[c], span{start: e.Time})
		s.spans[c] = sp[max(0, len(sp)-keptSpans):]
	case e.F == history.Acquire: // fail or info: not held
		delete(s.waits, c)
	case e.F == history.Release && e.Type == history.Invoke:
		s.endHold(c, e.Time)
		s.release[c] = true
	case e.F == history.Release:
		delete(s.release, c)
	case e.F == history.Read && e.Type == history.OK:
		s.reads[c]++
	case e.F == history.Lost && e.Type == history.Note:
		s.endHold(c, e.Time)
	case e.F == history.Crash && e.Process == history.Controller, // a worker exited
		e.F == history.Kill && e.Process == history.Nemesis && e.Type == history.Invoke:
		s.endHold(e.Target, e.Time)
		delete(s.waits, e.Target)
		delete(s.release, e.Target)
	default:
		return
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *LockState) endHold(c string, t int64) {
	if _, ok := s.holds[c]; ok {
		if sp := s.spans[c]; len(sp) > 0 && sp[len(sp)-1].end == 0 {
			sp[len(sp)-1].end = max(t, sp[len(sp)-1].start)
		}
	}
	delete(s.holds, c)
	delete(s.overtaken, c)
}

// Overlapping reports whether two clients' holds overlapped, by the times the events carry,
// among each client's latest holds: the double ownership the checker will find. Ask some time
// after Candidates(Holder) shows two holders, once the events of that moment have arrived.
func (s *LockState) Overlapping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := func(x span) int64 {
		if x.end == 0 {
			return math.MaxInt64
		}
		return x.end
	}
	for a, as := range s.spans {
		for b, bs := range s.spans {
			if a >= b {
				continue
			}
			for _, x := range as {
				for _, y := range bs {
					if x.start < end(y) && y.start < end(x) {
						return true
					}
				}
			}
		}
	}
	return false
}

// ReadsByOthers counts the reads of the resource that clients other than c have completed.
func (s *LockState) ReadsByOthers(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for o, k := range s.reads {
		if o != c {
			n += k
		}
	}
	return n
}

// Changed is closed at the next change of state.
func (s *LockState) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Candidates lists the clients in role now, the likeliest first: for holder and overtaken the
// latest to acquire (the one the lock service counts as its holder when two believe they hold),
// for waiter the one waiting longest (the head of a fair queue).
func (s *LockState) Candidates(role string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	var rank map[string]int64
	switch role {
	case Holder, Overtaken:
		rank = s.holds
		for c := range s.holds {
			if role == Holder || s.overtaken[c] {
				out = append(out, c)
			}
		}
		sort.Slice(out, func(i, j int) bool { return rank[out[i]] > rank[out[j]] })
	case Waiter:
		rank = s.waits
		for c := range s.waits {
			if s.othersHold(c) {
				out = append(out, c)
			}
		}
		sort.Slice(out, func(i, j int) bool { return rank[out[i]] < rank[out[j]] })
	}
	return out
}

func (s *LockState) othersHold(c string) bool {
	for h := range s.holds {
		if h != c {
			return true
		}
	}
	return false
}

// AtPoint reports whether client, stopped at a program point, is in role: a holder holds or is
// inside its release (a design's points there, such as between-get-and-del); a waiter is inside
// an acquire (it stopped there because it found the lock taken, whether or not the history shows
// the other holder yet).
func (s *LockState) AtPoint(client, role string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, holds := s.holds[client]
	switch role {
	case passer:
		return true
	case Holder:
		return holds || s.release[client]
	case Overtaken:
		return holds && s.overtaken[client]
	case Waiter:
		_, waits := s.waits[client]
		return waits
	}
	return false
}

// String describes the state, for logs and test failures.
func (s *LockState) String() string {
	var parts []string
	for _, r := range RoleNames() {
		c := s.Candidates(r)
		slices.Sort(c)
		parts = append(parts, r+": "+strings.Join(c, ","))
	}
	return strings.Join(parts, "; ")
}
