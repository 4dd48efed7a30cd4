package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Collateral is the harm a lock did to clients that held it rightfully, which mutual exclusion
// and the registers' data do not show: a lock can keep the data correct and still fail the
// releases of its holders, have its fencing refuse them, or hand out tokens that fencing cannot
// order.
//
// A client is a legitimate holder at time t when, by every record of the history:
//   - its acquire succeeded (ok) and it has not invoked a release since;
//   - it has not recorded losing the lock since (a "lost" note: its validity ended, its session
//     expired) and it did not die;
//   - no other client's acquire succeeded after its own and up to t (readers included: another
//     acquisition means the lock may have moved on);
//   - no fault acted on it, or on anything that is not a client (a lock node), from the invoke of
//     its acquire up to t: a pause, partition, delay, clock change or crash can end a lease or a
//     session without any record of it, so whatever follows is the fault's doing, not the lock's.
//
// A holder that lost the lock without knowing (paused past its lease, cut off) is a stale holder:
// its refused accesses and releases are the lock and fencing working, never damage.
type Collateral struct {
	// FailedReleases: releases (outer, and reentrant designs' inner ones) that a legitimate
	// holder invoked and that failed (fail: the lock said it was not held) — it could not give
	// the lock back.
	FailedReleases int            `json:"failed_releases"`
	FailedByClient map[string]int `json:"failed_releases_by_client,omitempty"`
	// UnknownReleases: such releases that ended with their outcome unknown (info: a timeout, a
	// lost connection). They may have freed the lock: reported, never counted as damage.
	UnknownReleases int `json:"unknown_releases,omitempty"`
	// LegitRejections: reads and writes of legitimate holders that a fenced register refused (per
	// register in RegisterVerdict.LegitRejected), judged when the access completed.
	LegitRejections    int            `json:"legit_rejections"`
	RejectedByClient   map[string]int `json:"legit_rejections_by_client,omitempty"`
	FirstFailedRelease *Harm          `json:"first_failed_release,omitempty"`
	FirstRejection     *Harm          `json:"first_legit_rejection,omitempty"`
	// UncertainRejections: refused reads and writes of clients that held the lock by every
	// record but one: a fault acted on them or on a server since they began acquiring (a lock
	// node restarted during the acquire, say). Whether they still held it rightfully the history
	// cannot tell (per register in RegisterVerdict.UncertainRejected): reported, never counted as
	// damage, and never called stale.
	UncertainRejections int            `json:"uncertain_rejections,omitempty"`
	UncertainByClient   map[string]int `json:"uncertain_rejections_by_client,omitempty"`
	FirstUncertain      *Harm          `json:"first_uncertain_rejection,omitempty"`
	// TokenAnomalies: holds whose fencing token is the same as an earlier hold's (SameToken) or
	// lower than one (LowerToken); "earlier" is by the acquire's ok. Two read holds of a
	// read/write lock are never compared. A hold counts once, as SameToken if it is both.
	TokenAnomalies int           `json:"token_anomalies"`
	SameToken      int           `json:"same_token"`
	LowerToken     int           `json:"lower_token"`
	FirstAnomaly   *TokenAnomaly `json:"first_token_anomaly,omitempty"`
}

// Harm is one failed release or refused access, for the verdict's words.
type Harm struct {
	Client   string        `json:"client"`
	Offset   time.Duration `json:"offset_ns"` // from the run's start
	Register string        `json:"register,omitempty"`
	Op       string        `json:"op"` // release, rerelease, read or write
	// Fault, for an uncertain rejection: the fault that touched the holder, as "crash of n1".
	Fault string `json:"fault,omitempty"`
}

// TokenAnomaly is one hold whose token does not order it after an earlier hold.
type TokenAnomaly struct {
	Client        string        `json:"client"`
	Token         int64         `json:"token"`
	Offset        time.Duration `json:"offset_ns"`
	Earlier       string        `json:"earlier_client"`
	EarlierToken  int64         `json:"earlier_token"`
	EarlierOffset time.Duration `json:"earlier_offset_ns"`
}

// Damaged reports whether the run shows any collateral damage.
func (c Collateral) Damaged() bool {
	return c.FailedReleases > 0 || c.LegitRejections > 0 || c.TokenAnomalies > 0
}

// holderStanding is how far the history shows a client held the lock rightfully.
type holderStanding int

const (
	notRightful holderStanding = iota // no holder, or a stale one: the lock moved on
	rightful                          // by every record
	uncertain                         // by every record, but a fault acted on it or a server since it began acquiring
)

// tenure is one client's current belief of holding the lock (acquired, not released, not lost,
// alive), as the collateral checks follow it.
type tenure struct {
	invoked, acquired int64 // the acquire's invoke and ok
}

// collateral computes Collateral and each register's LegitRejected from the history. A holder
// whose session lapsed during its tenure (lapses, Log.lapses) no longer held by every record.
func (l *Log) collateral(regs map[string]RegisterVerdict, runStart int64, lapses map[string]periods) Collateral {
	c := Collateral{}
	faults := l.faultsByTarget()
	// Indexed by a client's string id (dense and small: a slice is much cheaper than a map over
	// a million events).
	n := len(l.strs)
	lastOK := make([]int64, n)  // its latest acquire ok
	var acquired []int32        // clients that ever acquired: the ones lastOK means anything for
	invoked := make([]int64, n) // its pending acquire's invoke
	pending := make([]bool, n)  // it has one
	held := make([]tenure, n)   // its current tenure, when holding
	holding := make([]bool, n)
	hasAcquired := make([]bool, n)
	pendingRelease := map[[2]int64]bool{}      // (client, op) of releases invoked by a legitimate holder
	idRerelease := l.lookup(history.Rerelease) // 0 when the history has none
	isRelease := func(f int32) bool { return f == idRelease || (idRerelease != idEmpty && f == idRerelease) }

	// standing says whether p held the lock rightfully at t by every record (rightful), by every
	// record but a fault that acted on it or a server since it began acquiring (uncertain, with
	// the fault), or not (a stale holder, or no holder).
	standing := func(p int32, t int64) (holderStanding, *Fault) {
		if !holding[p] {
			return notRightful, nil
		}
		h := held[p]
		if lapsedIn(lapses[l.str(p)], h.acquired, t) {
			return notRightful, nil
		}
		for _, q := range acquired {
			if q != p && lastOK[q] > h.acquired && lastOK[q] <= t {
				return notRightful, nil
			}
		}
		for _, target := range []int32{p, idEmpty} { // its own faults, and the servers' (idEmpty)
			for i, f := range faults[target] {
				if f.Start <= t && f.End >= h.invoked {
					return uncertain, &faults[target][i]
				}
			}
		}
		return rightful, nil
	}
	legit := func(p int32, t int64) bool { st, _ := standing(p, t); return st == rightful }
	harm := func(first **Harm, p int32, t int64, op, register string) {
		if *first == nil {
			*first = &Harm{Client: l.str(p), Offset: time.Duration(t - runStart), Op: op, Register: register}
		}
	}
	for k := range l.recs {
		r := &l.recs[k]
		if dead, ok := l.death(r); ok {
			holding[dead] = false
			continue
		}
		if !l.isClient(r.proc) {
			continue
		}
		p := r.proc
		switch {
		case r.f == idAcquire && r.typ == tInvoke:
			if !holding[p] {
				invoked[p], pending[p] = r.t, true
			}
		case r.f == idAcquire && r.typ == tOK:
			if !holding[p] {
				inv := r.t // no invoke seen: the ok is all there is
				if pending[p] {
					inv = invoked[p]
				}
				held[p], holding[p], pending[p] = tenure{invoked: inv, acquired: r.t}, true, false
			}
			lastOK[p] = r.t
			if !hasAcquired[p] {
				hasAcquired[p] = true
				acquired = append(acquired, p)
			}
		case r.f == idLost:
			holding[p] = false
		case isRelease(r.f) && r.typ == tInvoke:
			if legit(p, r.t) {
				pendingRelease[[2]int64{int64(p), r.op}] = true
			}
			if r.f == idRelease {
				holding[p] = false
			}
		case isRelease(r.f):
			key := [2]int64{int64(p), r.op}
			switch {
			case pendingRelease[key] && r.typ == tFail:
				c.FailedReleases++
				c.FailedByClient = inc(c.FailedByClient, l.str(p))
				harm(&c.FirstFailedRelease, p, r.t, l.str(r.f), "")
			case pendingRelease[key] && r.typ == tInfo:
				c.UnknownReleases++
			}
			delete(pendingRelease, key)
		case (r.f == idRead || r.f == idWrite) && r.typ != tInvoke:
			for _, v := range l.registersOf(r) {
				if v.status != sRejected {
					continue
				}
				st, fault := standing(p, r.t)
				name := l.regNames[v.name]
				rv, ok := regs[name]
				switch st {
				case rightful:
					c.LegitRejections++
					c.RejectedByClient = inc(c.RejectedByClient, l.str(p))
					harm(&c.FirstRejection, p, r.t, l.str(r.f), name)
					rv.LegitRejected++
				case uncertain:
					c.UncertainRejections++
					c.UncertainByClient = inc(c.UncertainByClient, l.str(p))
					if c.FirstUncertain == nil {
						harm(&c.FirstUncertain, p, r.t, l.str(r.f), name)
						c.FirstUncertain.Fault = fault.Kind + " of " + fault.Target
					}
					rv.UncertainRejected++
				default:
					continue
				}
				if ok {
					regs[name] = rv
				}
			}
		}
	}
	l.tokenAnomalies(&c, runStart)
	return c
}

// tokenAnomalies finds the holds whose token does not come after every earlier hold's. Holds
// are taken in the order of their acquires' ok; a sort by token (stable, so in that order within a
// token) puts the holds that share a token next to each other, without a map of every token.
func (l *Log) tokenAnomalies(c *Collateral, runStart int64) {
	type tokened struct {
		client int32
		t      int64
		token  int64
		shared bool
		same   int32 // index of an earlier hold with the same token, or -1
	}
	var holds []tokened
	for k := range l.recs {
		r := &l.recs[k]
		if r.f == idAcquire && r.typ == tOK && r.hasToken && l.isClient(r.proc) {
			holds = append(holds, tokened{r.proc, r.t, r.token, r.role == idRead, -1})
		}
	}
	byToken := make([]int32, len(holds))
	for i := range byToken {
		byToken[i] = int32(i)
	}
	slices.SortStableFunc(byToken, func(a, b int32) int { return cmpInt(holds[a].token, holds[b].token) })
	for g := 0; g < len(byToken); {
		end := g + 1
		for end < len(byToken) && holds[byToken[end]].token == holds[byToken[g]].token {
			end++
		}
		// Within a group, a hold repeats the first earlier hold it is compared with: any for an
		// exclusive hold, an exclusive one for a read hold.
		firstAny, firstExcl := int32(-1), int32(-1)
		for _, i := range byToken[g:end] {
			h := &holds[i]
			switch {
			case !h.shared && firstAny >= 0:
				h.same = firstAny
			case h.shared && firstExcl >= 0:
				h.same = firstExcl
			}
			if firstAny < 0 {
				firstAny = i
			}
			if firstExcl < 0 && !h.shared {
				firstExcl = i
			}
		}
		g = end
	}
	// The highest token of every earlier hold, and of earlier exclusive holds only (what a read
	// hold is compared with).
	maxAll, maxExcl := int32(-1), int32(-1)
	for i := range holds {
		h := &holds[i]
		bar := maxAll
		if h.shared {
			bar = maxExcl
		}
		earlier := int32(-1)
		switch {
		case h.same >= 0:
			earlier = h.same
			c.SameToken++
		case bar >= 0 && h.token < holds[bar].token:
			earlier = bar
			c.LowerToken++
		}
		if earlier >= 0 {
			c.TokenAnomalies++
			if c.FirstAnomaly == nil {
				e := holds[earlier]
				c.FirstAnomaly = &TokenAnomaly{Client: l.str(h.client), Token: h.token, Offset: time.Duration(h.t - runStart),
					Earlier: l.str(e.client), EarlierToken: e.token, EarlierOffset: time.Duration(e.t - runStart)}
			}
		}
		if maxAll < 0 || h.token > holds[maxAll].token {
			maxAll = int32(i)
		}
		if !h.shared && (maxExcl < 0 || h.token > holds[maxExcl].token) {
			maxExcl = int32(i)
		}
	}
}

// faultsByTarget groups the nemesis's actions by target: a client's string id, or idEmpty for
// every target that is not a client (lock nodes, "leader"). A client is a process that recorded
// operations of its own.
func (l *Log) faultsByTarget() map[int32][]Fault {
	clients := make([]bool, len(l.strs))
	for k := range l.recs {
		if r := &l.recs[k]; r.typ == tInvoke && l.isClient(r.proc) {
			clients[r.proc] = true
		}
	}
	out := map[int32][]Fault{}
	for _, f := range l.Faults() {
		id, ok := l.ids[f.Target]
		if !ok || !clients[id] {
			id = idEmpty
		}
		out[id] = append(out[id], f)
	}
	for _, fs := range out {
		sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	}
	return out
}

// lookup is the string id of s, or 0 when the history never mentions it.
func (l *Log) lookup(s string) int32 { return l.ids[s] }

func inc(m map[string]int, k string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k]++
	return m
}
