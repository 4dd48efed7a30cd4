package debate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/resource"
	"github.com/lockcheck/lockcheck/scenarios"
)

// The shipped debate scenarios load, each names its claims and the side it supports, and
// between them they cover every claim the debate report must show.
func TestShippedDebateScenariosCoverTheRequiredClaims(t *testing.T) {
	list, err := Load(Options{Dir: "../scenarios/debate"})
	if err != nil {
		t.Fatal(err)
	}
	r := Report{}
	for _, sc := range list {
		if len(sc.Claims) == 0 {
			t.Errorf("%s names no claim", sc.Name)
		}
		if sc.Supports == "" || sc.Finding == "" {
			t.Errorf("%s lacks supports or finding", sc.Name)
		}
		r.Rows = append(r.Rows, Row{Scenario: sc.Name, Claims: sc.Claims})
	}
	if missing := r.uncovered(); len(missing) > 0 {
		t.Errorf("claims without a debate scenario: %v", missing)
	}
}

func TestObservedAndViolated(t *testing.T) {
	v := checker.Verdict{
		MutualExclusion: checker.MutualExclusion{Windows: []checker.Overlap{{}}, TotalOverlap: 1500 * time.Millisecond},
		Liveness:        checker.Liveness{Acquisitions: 12},
		Registers: map[string]checker.RegisterVerdict{
			resource.Unfenced: {Applicable: true, Linearizable: checker.No, LostUpdates: 2, LostUpdatesKnown: true},
			resource.FencedRW: {Applicable: true, Linearizable: checker.Yes, WritesRejected: 1},
		},
	}
	got := Observed(v)
	want := "double ownership (1 window(s), 1.5s); unfenced lost 2 update(s); fenced-rw ok (1 stale rejected)"
	if got != want || !Violated(v) {
		t.Fatalf("Observed = %q (violated %v), want %q", got, Violated(v), want)
	}
	v = checker.Verdict{MutualExclusion: checker.MutualExclusion{Holds: true}, Liveness: checker.Liveness{Acquisitions: 12},
		Registers: map[string]checker.RegisterVerdict{resource.Unfenced: {Applicable: true, Linearizable: checker.Yes}}}
	if Violated(v) || Observed(v) != "mutual exclusion held; unfenced ok" {
		t.Fatalf("a clean verdict: %q violated=%v", Observed(v), Violated(v))
	}
}

func TestReportOrdersClaimsAndShowsRepeatability(t *testing.T) {
	k10 := &scenarios.Scenario{Claims: []string{"K10"}, Path: "k10.yaml"}
	k2 := &scenarios.Scenario{Claims: []string{"K2"}, Path: "k2.yaml"}
	a4 := &scenarios.Scenario{Claims: []string{"A4"}, Path: "a4.yaml"}
	a10 := &scenarios.Scenario{Claims: []string{"A10"}, Path: "a10.yaml"}
	m1 := &scenarios.Scenario{Claims: []string{"M1", "A7"}, Path: "mistake-z.yaml"}
	m4 := &scenarios.Scenario{Claims: []string{"M4"}, Path: "mistake-a.yaml"}
	none := &scenarios.Scenario{Path: "a0.yaml"}
	order := []*scenarios.Scenario{k2, k10, a4, a10, m1, m4, none}
	for i := 1; i < len(order); i++ {
		if claimOrder(order[i-1]) >= claimOrder(order[i]) {
			t.Errorf("%s (%s) does not sort before %s (%s)", order[i-1].Path, claimOrder(order[i-1]), order[i].Path, claimOrder(order[i]))
		}
	}
	rows := []Row{{Scenario: "k2-x", Claims: []string{"K2"}, Supports: "kleppmann", Runs: 1, Matched: 1, Observed: "double ownership"},
		{Scenario: "k2-random", Claims: []string{"K2"}, Random: true, Runs: 20, Matched: 20, Detected: 17}}
	rec := &Record{Measured: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), Command: "lockcheck debate --count 10", Rows: []Row{
		{Scenario: "k2-x", Runs: 10, Matched: 10, Detected: 10}, {Scenario: "k2-random", Random: true, Runs: 20, Matched: 20, Detected: 17}}}
	var b strings.Builder
	Report{Command: "lockcheck debate", Rows: rows, Record: rec}.Markdown(&b)
	md := b.String()
	for _, want := range []string{"| [K2](../docs/CLAIMS.md#k2) | [k2-x](#k2-x) |", "| yes | 10/10 | Kleppmann |", "detected 17/20 seeds",
		"Claims with no scenario yet: [K3](../docs/CLAIMS.md#k3),"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
