package checker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// tokenlessHistory is a lock without fencing tokens: only "unfenced" is accessed, but the
// resource reports every register at the end.
func tokenlessHistory() *builder {
	return newHistory().start(0).
		hold("client-1", 10, 20).increment("client-1", 1, 11, accepted("unfenced", 0)).
		hold("client-2", 30, 40).increment("client-2", 1, 31, accepted("unfenced", 1)).
		final(50, map[string]int64{"unfenced": 2, "fenced-write": 0, "fenced-rw": 0, "cas-random": 0}).end(50)
}

func TestRegistersNoSectionTouchedAreNotApplicable(t *testing.T) {
	v := Check(tokenlessHistory().build(), Options{})
	for _, name := range []string{"fenced-write", "fenced-rw", "cas-random"} {
		r, ok := v.Registers[name]
		if !ok || r.Applicable || r.Linearizable != NotApplicable || r.LostUpdatesKnown {
			t.Errorf("%s = %+v (present %v), want not applicable", name, r, ok)
		}
	}
	if r := v.Registers["unfenced"]; !r.Applicable || r.Linearizable != Yes || r.LostUpdates != 0 || *r.Final != 2 {
		t.Errorf("unfenced = %+v", r)
	}
}

func TestNoFinalValueLeavesLostUpdatesUnknown(t *testing.T) {
	h := newHistory().start(0).hold("client-1", 10, 20).increment("client-1", 1, 11, accepted("unfenced", 0)).end(30)
	r := Check(h.build(), Options{}).Registers["unfenced"]
	if r.Final != nil || r.LostUpdatesKnown || r.Linearizable != Yes {
		t.Errorf("unfenced = %+v, want no final, lost updates unknown, still linearizable", r)
	}
}

func TestTableShowsEveryCheck(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(Check(tokenlessHistory().build(), Options{}), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"mutual exclusion  holds",
		"fenced-rw     n/a (lock has no fencing token)",
		"cas-random    n/a (lock has no random value)",
		"unfenced      yes           0             2      0         2",
		"liveness", "acquisitions", "longest unavailable",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	if err := Table(Check(staleWriteHistory().build(), Options{}), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "VIOLATED: client-1 and client-2") {
		t.Errorf("table does not show the violation:\n%s", buf.String())
	}
}

func TestVerdictJSONUsesSnakeCase(t *testing.T) {
	data, err := json.Marshal(Check(staleWriteHistory().build(), Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"mutual_exclusion":{"holds":false`, `"total_overlap_ns":30000000`,
		`"clients":["client-1","client-2"]`, `"lost_updates_known":true`, `"linearizable":"no"`,
		`"acquire_latency_p99_ns"`, `"stuck":false`, `"summary":"`} {
		if !bytes.Contains(data, []byte(key)) {
			t.Errorf("verdict JSON lacks %s:\n%s", key, data)
		}
	}
}

func TestAnEmptyHistoryIsJudgedWithoutPanicking(t *testing.T) {
	v := Check(nil, Options{})
	if !v.MutualExclusion.Holds || v.Liveness.Stuck || len(v.Registers) != 0 || v.Summary == "" {
		t.Fatalf("empty history: %+v", v)
	}
}

func TestCheckSortsAnUnsortedHistoryWithoutTouchingIt(t *testing.T) {
	events := staleWriteHistory().build()
	reversed := make([]history.Event, len(events))
	for i, e := range events {
		reversed[len(events)-1-i] = e
	}
	first := reversed[0]
	if got, want := Check(reversed, Options{}).Summary, Check(events, Options{}).Summary; got != want {
		t.Errorf("unsorted: %q\n  sorted: %q", got, want)
	}
	if reversed[0].Time != first.Time {
		t.Error("Check reordered the caller's slice")
	}
}
