package checker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// LeaseKept is the lease the lock's servers kept for the run's lock, as they said it after the
// first grant (the runner's history.LeaseKept note), beside the TTL the scenario gave the lock
// and the longest a fault kept a client from every server. A lease much longer than the TTL is
// one the faults, sized to the TTL, may never outlast: a holder frozen for three TTLs still
// holds, and no double ownership can show.
type LeaseKept struct {
	Server  string        `json:"server"`
	What    string        `json:"what"`              // "key …", "lease …", "session …"
	Kept    time.Duration `json:"kept_ns"`           // as granted, or the most the server had left
	Granted bool          `json:"granted,omitempty"` // Kept is the server's grant, not what it had left
	Asked   time.Duration `json:"asked_ns"`          // the scenario's TTL
	// Silence is the longest a fault kept one client from every server (a pause, a cut of all
	// its links, a delay of all of them), and Silenced whose; 0 when no fault did.
	Silence  time.Duration `json:"longest_silence_ns,omitempty"`
	Silenced string        `json:"silenced,omitempty"`
}

// leaseOff is how far from the TTL the kept lease must be for the verdict to say so: a server
// that counts in whole seconds, or a key's time left read a moment after its grant, is near
// enough.
const leaseOff = 1.25

// Differs reports whether the servers kept a lease further from the TTL than leaseOff: longer,
// or, when the server said what it granted (not only what it had left, which a slow question
// makes shorter), shorter.
func (k LeaseKept) Differs() bool {
	if k.Asked <= 0 {
		return false
	}
	return float64(k.Kept) > leaseOff*float64(k.Asked) || k.Granted && float64(k.Kept)*leaseOff < float64(k.Asked)
}

// Outlasted reports whether some fault kept a client silent longer than the kept lease.
func (k LeaseKept) Outlasted() bool { return k.Silence > k.Kept }

// Words say the kept lease beside the TTL, and what that means for the faults; "" when the two
// agree.
func (k LeaseKept) Words() string {
	if !k.Differs() {
		return ""
	}
	kept := "kept"
	if !k.Granted {
		kept = "had at least"
	}
	s := fmt.Sprintf("the servers %s %s for the lock (%s on %s), not the %s TTL the lock was given", kept, Human(k.Kept), k.What,
		k.Server, Human(k.Asked))
	switch {
	case k.Kept < k.Asked:
	case k.Silence == 0:
		s += ": no fault kept a client from the servers at all"
	case !k.Outlasted():
		s += fmt.Sprintf(": no fault kept a client from the servers that long (longest: %s, %s), so no holder could outlive it; "+
			"size the faults to it (a scenario's ttl, lockcheck hunt --ttl)", Human(k.Silence), k.Silenced)
	}
	return s
}

// leaseKept reads the lease note, if the run has one, and the longest silence of the faults.
func (l *Log) leaseKept() *LeaseKept {
	if l.lease == nil {
		return nil
	}
	e := l.lease
	var p struct {
		What    string `json:"what"`
		Asked   int64  `json:"asked_ns"`
		Granted bool   `json:"granted"`
	}
	_ = json.Unmarshal(e.Params, &p)
	k := &LeaseKept{Server: e.Target, What: p.What, Kept: time.Duration(e.Duration), Granted: p.Granted, Asked: time.Duration(p.Asked)}
	for _, f := range l.Faults() {
		if !history.IsClient(f.Target) {
			continue
		}
		if heard, ok := silence(f); ok && time.Duration(heard-f.Start) > k.Silence {
			k.Silence, k.Silenced = time.Duration(heard-f.Start), f.Target
		}
	}
	return k
}
