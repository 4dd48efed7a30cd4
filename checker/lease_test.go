package checker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// leaseNote records the servers' lease note: kept ms, asked ms.
func (b *builder) leaseNote(t, kept, asked float64, granted bool) *builder {
	params, _ := json.Marshal(map[string]any{"what": "key lockcheck:x:lock", "asked_ns": ms(asked), "granted": granted})
	return b.add(history.Event{Time: ms(t), Process: history.Controller, Type: history.Note, F: history.LeaseKept, Target: "n1",
		Duration: ms(kept), Params: params})
}

// A lease the servers kept five times longer than the TTL, beside pauses sized to the TTL, is
// said, with the longest silence; a lease as long as the TTL, or one a pause outlasted, is not
// called unreached.
func TestTheVerdictSaysWhenNoFaultOutlastedTheLeaseTheServersKept(t *testing.T) {
	run := func(kept, pause float64) Verdict {
		return Check(newHistory().start(0).acquire("client-1", 10, 11).leaseNote(20, kept, 400, false).
			pause("client-1", 30, 30+pause).release("client-1", 2800, 2801).end(3000).build(), Options{})
	}
	v := run(2000, 1200)
	if v.Lease == nil || v.Lease.Kept != 2*time.Second || v.Lease.Silence != 1200*time.Millisecond || v.Lease.Silenced != "client-1" {
		t.Fatalf("lease: %+v", v.Lease)
	}
	if !strings.Contains(v.Summary, "the servers had at least 2s for the lock (key lockcheck:x:lock on n1), not the 400ms TTL") ||
		!strings.Contains(v.Summary, "no fault kept a client from the servers that long (longest: 1.2s, client-1)") {
		t.Errorf("summary: %s", v.Summary)
	}
	if v := run(2000, 2500); !strings.Contains(v.Summary, "not the 400ms TTL") || strings.Contains(v.Summary, "no fault kept") {
		t.Errorf("a pause that outlasted the lease: %s", v.Summary)
	}
	if v := run(450, 1200); v.Lease == nil || strings.Contains(v.Summary, "the servers") {
		t.Errorf("a lease near the TTL: %s", v.Summary)
	}
	if v := Check(newHistory().start(0).acquire("client-1", 10, 11).release("client-1", 20, 21).end(30).build(), Options{}); v.Lease != nil {
		t.Errorf("no note, yet a lease: %+v", v.Lease)
	}
}
