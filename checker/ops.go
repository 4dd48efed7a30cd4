package checker

import (
	"sort"
	"strconv"
	"strings"
)

// op is one client operation: its invoke and, if it ever came, its completion. Every check reads
// these rather than raw records, so that invoke/completion pairing is done once.
type op struct {
	proc int32 // string id of the client
	f    int32 // string id of the operation's name
	cs   int64
	// invoke and done index Log.recs; done is -1 when the op never completed (the client died or
	// the run ended first).
	invoke, done int32
}

func (o *op) completed() bool { return o.done >= 0 }

// clientOps pairs invokes with completions by (process, op), in invoke order. The history reader
// refuses a completion without its invoke; one that slips through (a Log built from events in
// memory) cannot be placed in time and is dropped.
func (l *Log) clientOps() []op {
	type key struct {
		proc int32
		op   int64
	}
	ops := make([]op, 0, len(l.recs)/2) // about two records per op: no garbage from regrowing
	open := map[key]int{}               // → index in ops
	for k := range l.recs {
		r := &l.recs[k]
		if !l.isClient(r.proc) {
			continue
		}
		switch r.typ {
		case tInvoke:
			open[key{r.proc, r.op}] = len(ops)
			ops = append(ops, op{proc: r.proc, f: r.f, cs: r.cs, invoke: int32(k), done: -1})
		case tOK, tFail, tInfo:
			kk := key{r.proc, r.op}
			i, found := open[kk]
			if !found || ops[i].f != r.f {
				continue
			}
			delete(open, kk)
			ops[i].done = int32(k)
			if ops[i].cs == 0 {
				ops[i].cs = r.cs
			}
		}
	}
	return ops
}

// bounds are the run's start and end: the controller's start/end notes, else the first and last
// events. A belief of holding the lock still open at the end is cut there.
type bounds struct{ start, end int64 }

func (l *Log) bounds() bounds {
	b := bounds{l.first, l.last}
	for i := range l.recs {
		r := &l.recs[i]
		if r.proc != idController || r.typ != tNote {
			continue
		}
		switch r.f {
		case idStart:
			b.start = r.t
		case idEnd:
			b.end = r.t
		}
	}
	return b
}

// death reports the client (string id) a record says died: a controller's crash note or a
// nemesis kill. A kill's invoke is ignored: the process was still alive when the kill was sent.
func (l *Log) death(r *rec) (int32, bool) {
	if !l.isClient(r.target) {
		return 0, false
	}
	switch {
	case r.f == idCrash && r.typ == tNote:
		return r.target, true
	case r.f == idKill && r.proc == idNemesis && (r.typ == tNote || r.typ == tOK):
		return r.target, true
	}
	return 0, false
}

// LessClient orders "client-2" before "client-10".
func LessClient(a, b string) bool {
	pa, na, oka := splitNumber(a)
	pb, nb, okb := splitNumber(b)
	if oka && okb && pa == pb && na != nb {
		return na < nb
	}
	return a < b
}

func splitNumber(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return s, 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	return s[:i], n, err == nil
}

// clientIDs numbers the clients from 0 in natural order, as porcupine's visualization wants;
// the map is by string id.
func (l *Log) clientIDs(ops []op) map[int32]int {
	var procs []int32
	seen := map[int32]bool{}
	for _, o := range ops {
		if !seen[o.proc] {
			seen[o.proc] = true
			procs = append(procs, o.proc)
		}
	}
	sort.Slice(procs, func(i, j int) bool { return LessClient(l.str(procs[i]), l.str(procs[j])) })
	ids := make(map[int32]int, len(procs))
	for i, p := range procs {
		ids[p] = i
	}
	return ids
}
