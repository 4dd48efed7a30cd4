package checker

import (
	"slices"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Log is a history reduced to what the checks and the report read, in time order. A soak run's
// history has a million events; held as history.Event values (a map of registers each) they took
// gigabytes, so a Log keeps one fixed-size record per event with its strings interned and its
// register values in one shared slice. The resource's own access log is counted but not kept:
// no check reads it. The nemesis's events are kept whole: they are few, and Faults reads them.
type Log struct {
	strs []string         // interned strings; id 0 is ""
	ids  map[string]int32 // string → id
	recs []rec
	regs []regValue
	// regNames are register names; regValue.name indexes it.
	regNames []string
	regIDs   map[string]uint8
	landed   map[landedKey]bool // the resource's own log: the writes it applied (noteLanded)
	nemesis  []history.Event
	events   int   // every event of the history, including those not kept
	first    int64 // the earliest and latest time of any event
	last     int64

	// What Check found, for Visualize: the piece of each register's history to draw.
	pieces map[string]*piece

	// promised holds what the few answers that carry a promise said (history.Event.Promise,
	// Since, Session), by client and op, and rules each client's design's promise rule: kept
	// apart from recs, which a million-event history holds one of per event.
	promised map[opKey]promiseRec
	rules    map[int32]*history.PromiseRule
	skewed   []string // clients whose clocks the scenario set off true time from the start

	server string // what the lock servers ran (the start note's), "" when the service did not say

	lates []lateWake     // the clients' Late notes (scheduling.go)
	lease *history.Event // the controller's LeaseKept note (lease.go), if any
}

// rec is one event.
type rec struct {
	t, op, cs, token int64
	regs             int32 // index of its first register value in Log.regs
	proc, f, target  int32 // string ids
	err, role        int32
	nregs            uint8
	typ              uint8
	hasToken         bool
}

// opKey names one client operation: the client's string id and its op number.
type opKey struct {
	proc int32
	op   int64
}

// promiseRec is what an answer promised (history.Event's Promise, Since and Session).
type promiseRec struct {
	promise, since int64
	session        int32
}

type regValue struct {
	value  int64
	name   uint8 // index in Log.regNames
	status uint8 // a statusCode
}

// Event types as rec.typ.
const (
	tOther uint8 = iota
	tInvoke
	tOK
	tFail
	tInfo
	tNote
)

var typeCodes = map[history.Type]uint8{history.Invoke: tInvoke, history.OK: tOK, history.Fail: tFail, history.Info: tInfo, history.Note: tNote}

// Register statuses as regValue.status.
const (
	sNone uint8 = iota
	sAccepted
	sRejected
	sUnknown
	sOther
)

var statusCodes = map[string]uint8{"": sNone, history.Accepted: sAccepted, history.Rejected: sRejected, history.Unknown: sUnknown}

// Ids of the strings the checks compare with, interned first by newLog in this order.
const (
	idEmpty int32 = iota
	idAcquire
	idRelease
	idRead
	idWrite
	idCrash
	idLost
	idKill
	idStart
	idEnd
	idFinal
	idController
	idNemesis
	idResource
	idCheck
	idRenew
	idReacquire
)

var fixedStrings = []string{"", history.Acquire, history.Release, history.Read, history.Write, history.Crash,
	history.Lost, history.Kill, history.Start, history.End, history.Final, history.Controller, history.Nemesis, history.Resource,
	history.Check, history.Renew, history.Reacquire}

func newLog() *Log {
	l := &Log{ids: map[string]int32{}, regIDs: map[string]uint8{}, first: 1<<63 - 1, last: -1 << 63,
		promised: map[opKey]promiseRec{}, rules: map[int32]*history.PromiseRule{}}
	for _, s := range fixedStrings {
		l.id(s)
	}
	return l
}

func (l *Log) id(s string) int32 {
	if id, ok := l.ids[s]; ok {
		return id
	}
	id := int32(len(l.strs))
	l.strs = append(l.strs, s)
	l.ids[s] = id
	return id
}

func (l *Log) str(id int32) string { return l.strs[id] }

// Load reads a history file into a Log. Errors name the file and the line (history.Scan).
func Load(path string) (*Log, error) {
	l := newLog()
	err := history.ScanFile(path, func(_ int, e *history.Event) error {
		l.add(e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.finish()
	return l, nil
}

// FromEvents makes a Log of events (in any order).
func FromEvents(events []history.Event) *Log {
	l := newLog()
	for i := range events {
		l.add(&events[i])
	}
	l.finish()
	return l
}

// add keeps what the checks need of one event; e may be reused by the caller afterwards.
func (l *Log) add(e *history.Event) {
	l.events++
	l.first, l.last = min(l.first, e.Time), max(l.last, e.Time)
	switch e.Process {
	case history.Resource:
		if e.F == history.Write {
			l.noteLanded(e)
		}
		if e.F != history.Final {
			return // the rest of the resource's own access log: no check reads it
		}
	case history.Nemesis:
		l.nemesis = append(l.nemesis, e.Clone())
	case history.Controller:
		if e.F == history.Start && e.Server != "" {
			l.server = e.Server
		}
		if e.F == history.ClientDesign && e.Rule != nil && e.Target != "" {
			r := *e.Rule
			l.rules[l.id(e.Target)] = &r
		}
		if e.F == history.LeaseKept && e.Type == history.Note {
			c := e.Clone()
			l.lease = &c
		}
		if e.F == history.ClientDesign && e.Target != "" && history.ClockSetOff(e.Params) {
			l.skewed = append(l.skewed, e.Target)
		}
	}
	if e.Type == history.Note && e.F == history.Late && history.IsClient(e.Process) {
		l.lates = append(l.lates, lateWake{client: e.Process, at: e.Time, late: time.Duration(e.Duration)})
	}
	if e.Type == history.OK && (e.Promise != 0 || e.Since != 0 || e.Session != "") && history.IsClient(e.Process) {
		l.promised[opKey{l.id(e.Process), e.Op}] = promiseRec{promise: e.Promise, since: e.Since, session: l.id(e.Session)}
	}
	r := rec{t: e.Time, op: e.Op, cs: e.CS, proc: l.id(e.Process), f: l.id(e.F), target: l.id(e.Target),
		typ: typeCodes[e.Type], regs: int32(len(l.regs))}
	if e.Role != "" {
		r.role = l.id(e.Role)
	}
	if e.Error != "" {
		r.err = l.id(e.Error)
	}
	if e.Token != nil {
		r.token, r.hasToken = *e.Token, true
	}
	for name, v := range e.Registers {
		n, ok := l.regID(name)
		if !ok {
			continue // more registers than any resource has: not a history of ours
		}
		st, ok := statusCodes[v.Status]
		if !ok {
			st = sOther
		}
		l.regs = append(l.regs, regValue{value: v.Value, name: n, status: st})
		r.nregs++
	}
	l.recs = append(l.recs, r)
}

// regID is the register's id, given on first sight; false past 255 registers.
func (l *Log) regID(name string) (uint8, bool) {
	n, ok := l.regIDs[name]
	if !ok {
		if len(l.regNames) == 255 {
			return 0, false
		}
		n = uint8(len(l.regNames))
		l.regNames = append(l.regNames, name)
		l.regIDs[name] = n
	}
	return n, true
}

// landedKey names one client's write of one register in one critical section.
type landedKey struct {
	client int32
	cs     int64
	reg    uint8
}

// noteLanded keeps, from the resource's own log, which registers applied a client's write (its
// Target) of critical section CS: what became of a write whose client never heard back.
func (l *Log) noteLanded(e *history.Event) {
	if e.CS == 0 || e.Target == "" {
		return
	}
	for name, v := range e.Registers {
		if n, ok := l.regID(name); ok && v.Status == history.Accepted {
			if l.landed == nil {
				l.landed = map[landedKey]bool{}
			}
			l.landed[landedKey{l.id(e.Target), e.CS, n}] = true
		}
	}
}

// finish orders the records by time, keeping the written order among equal times.
func (l *Log) finish() {
	if !slices.IsSortedFunc(l.recs, cmpTime) {
		slices.SortStableFunc(l.recs, cmpTime)
	}
	if l.events == 0 {
		l.first, l.last = 0, 0
	}
}

func cmpTime(a, b rec) int {
	switch {
	case a.t < b.t:
		return -1
	case a.t > b.t:
		return 1
	}
	return 0
}

// registers of a record.
func (l *Log) registersOf(r *rec) []regValue { return l.regs[r.regs : r.regs+int32(r.nregs)] }

// register finds one register's value in a record.
func (l *Log) register(r *rec, name uint8) (regValue, bool) {
	for _, v := range l.registersOf(r) {
		if v.name == name {
			return v, true
		}
	}
	return regValue{}, false
}

func (l *Log) isClient(id int32) bool {
	return id != idEmpty && id != idNemesis && id != idResource && id != idController
}

// Events is how many events the history had, including those a Log does not keep.
func (l *Log) Events() int { return l.events }

// Faults are the nemesis's actions (see Faults).
func (l *Log) Faults() []Fault { return Faults(l.faultEvents()) }

// faultEvents are the nemesis's events with the controller's start and end notes, which bound
// faults never healed.
func (l *Log) faultEvents() []history.Event {
	b := l.bounds()
	out := make([]history.Event, 0, len(l.nemesis)+2)
	out = append(out, history.Event{Time: b.start, Process: history.Controller, Type: history.Note, F: history.Start})
	out = append(out, l.nemesis...)
	return append(out, history.Event{Time: b.end, Process: history.Controller, Type: history.Note, F: history.End})
}
