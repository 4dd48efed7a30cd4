package checker

// finalValues are the register values the resource reported after the clients stopped (the last
// "final" note); nil when the run ended before they were read.
func (l *Log) finalValues() map[string]int64 {
	var final map[string]int64
	for i := range l.recs {
		r := &l.recs[i]
		if r.proc == idResource && r.f == idFinal && r.typ == tNote {
			final = map[string]int64{}
			for _, v := range l.registersOf(r) {
				final[l.regNames[v.name]] = v.value
			}
		}
	}
	return final
}

// initialValues are the registers' values at the start of the run: 0 unless the controller's
// start note says otherwise (a resource that was not empty).
func (l *Log) initialValues() map[string]int64 {
	init := map[string]int64{}
	for i := range l.recs {
		r := &l.recs[i]
		if r.proc == idController && r.f == idStart && r.typ == tNote {
			for _, v := range l.registersOf(r) {
				init[l.regNames[v.name]] = v.value
			}
		}
	}
	return init
}

// lostUpdates compares the increments known to have been applied (acknowledged, or unknown to
// their client but in the resource's own log) with how far the register really moved. Unknown
// writes with no such record may have landed and moved it further: that is not a loss, hence the
// floor.
// No more updates can be lost than were applied: a register that ends below where it
// started lost every one of them and more, and that is said apart (FinalBelowInitial), not
// counted as updates lost.
func lostUpdates(r *RegisterVerdict, initial int64, final map[string]int64, name string) {
	f, ok := final[name]
	if !ok {
		return // no final read: nothing to compare with
	}
	r.Final = &f
	if f < initial {
		r.FinalBelowInitial = initial - f
	}
	if !r.Applicable {
		return
	}
	r.LostUpdatesKnown = true
	moved := max(0, f-initial)
	r.LostUpdates = int(max(0, int64(r.AckedIncrements+r.LandedUnknown)-moved))
}
