package runner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/services"
)

// leaseSamples is how many times the servers are asked, a quarter of the TTL apart, once a client
// first holds: the longest answer is noted (a key's time left shrinks between a grant and the
// question; a renewal shows the lease it renews to).
const leaseSamples = 3

// watchLease notes what the lock's servers keep for the run's lock (history.LeaseKept), asked
// after the first grant: the lease the lock really grants, which a library may round up from
// the TTL it was given or choose itself, and which faults sized to the TTL may never outlast.
// It gives up quietly when the service keeps no lease, no client ever holds, or ctx ends.
func (r *run) watchLease(ctx context.Context) {
	state := r.nem.State()
	for len(state.Candidates(nemesis.Holder)) == 0 {
		select {
		case <-ctx.Done():
			return
		case <-state.Changed():
		}
	}
	var best services.Lease
	for i := range leaseSamples {
		if i > 0 && !wait(ctx, r.sc.TTL.D()/4) {
			break
		}
		ask, cancel := context.WithTimeout(ctx, time.Second)
		ls, err := r.svc.service.Leases(ask, r.svc.key)
		cancel()
		if err != nil {
			r.o.Logger.Debug("ask the servers for the lock's lease", "err", err)
		}
		for _, l := range ls {
			if l.Length() > best.Length() {
				best = l
			}
		}
	}
	if best.Length() == 0 {
		return
	}
	params, _ := json.Marshal(map[string]any{"what": best.What, "asked_ns": r.sc.TTL.D(), "granted": best.Granted > 0})
	r.note(history.LeaseKept, history.Event{Target: best.Server, Duration: int64(best.Length()), Params: params})
}

// wait waits for d, or reports false if ctx ends first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
