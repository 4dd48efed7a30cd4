package checker

import "github.com/lockcheck/lockcheck/history"

// finalValues are the register values the resource reported after the clients stopped (the last
// "final" note); nil when the run ended before they were read.
func finalValues(events []history.Event) map[string]int64 {
	var final map[string]int64
	for _, e := range events {
		if e.Process == history.Resource && e.F == history.Final && e.Type == history.Note {
			final = map[string]int64{}
			for name, r := range e.Registers {
				final[name] = r.Value
			}
		}
	}
	return final
}

// initialValues are the registers' values at the start of the run: 0 unless the controller's
// start note says otherwise (a resource that was not empty).
func initialValues(events []history.Event) map[string]int64 {
	init := map[string]int64{}
	for _, e := range events {
		if e.Process == history.Controller && e.F == history.Start && e.Type == history.Note {
			for name, r := range e.Registers {
				init[name] = r.Value
			}
		}
	}
	return init
}

// lostUpdates compares acknowledged increments with how far the register really moved. Unknown
// writes that landed make it move further than acknowledged: that is not a loss, hence the floor.
func lostUpdates(r *RegisterVerdict, initial int64, final map[string]int64, name string) {
	f, ok := final[name]
	if !ok {
		return // no final read: nothing to compare with
	}
	r.Final = &f
	if !r.Applicable {
		return
	}
	r.LostUpdatesKnown = true
	r.LostUpdates = int(max(0, int64(r.AckedIncrements)-(f-initial)))
}
