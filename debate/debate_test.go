package debate

import (
	"fmt"
	"os"
	"path/filepath"
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
	rec := &Record{Measurements: []Measurement{{Condition: "quiet", Provider: "local", Parallel: 1,
		Measured: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), Command: "lockcheck debate --count 10", Rows: []Row{
			{Scenario: "k2-x", Runs: 10, Matched: 10, Detected: 10}, {Scenario: "k2-random", Random: true, Runs: 20, Matched: 20, Detected: 17}}}}}
	var b strings.Builder
	Report{Command: "lockcheck debate", Rows: rows, Record: rec}.Markdown(&b)
	md := b.String()
	for _, want := range []string{"| [K2](../docs/CLAIMS.md#k2) | [k2-x](#k2-x) |", "| yes | local, quiet: 10/10 | Kleppmann |", "detected 17/20 seeds",
		"Claims with no scenario yet: [K3](../docs/CLAIMS.md#k3),"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestRecordKeepsOneMeasurementPerProviderAndCondition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	row := func(matched int) []Row { return []Row{{Scenario: "k2-x", Runs: 20, Matched: matched}} }
	for _, m := range []Measurement{
		{Condition: "quiet", Provider: "local", Rows: row(20)},
		{Condition: "loaded", Provider: "local", Rows: row(19)},
		{Condition: "quiet", Provider: "local", Rows: row(18)}, // measured again: replaces the first
		{Condition: "quiet", Provider: "docker", Rows: row(17)},
	} {
		if err := WriteRecord(path, m, false); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range rec.Measurements {
		got = append(got, fmt.Sprintf("%s=%d", m.Label(), m.Rows[0].Matched))
	}
	if want := "docker, quiet=17 local, loaded=19 local, quiet=18"; strings.Join(got, " ") != want {
		t.Errorf("measurements %v, want %s", got, want)
	}
}

// A run of some scenarios (--only) replaces those rows of the measurement and keeps the others.
func TestPartialMeasurementReplacesOnlyItsRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.json")
	full := Measurement{Condition: "quiet", Provider: "local", Command: "lockcheck debate --count 20",
		Rows: []Row{{Scenario: "a", Runs: 20, Matched: 20}, {Scenario: "b", Runs: 20, Matched: 19}, {Scenario: "c", Runs: 20, Matched: 20}}}
	again := Measurement{Condition: "quiet", Provider: "local", Command: "lockcheck debate --only b", Parallel: 1,
		Measured: time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC), Rows: []Row{{Scenario: "b", Runs: 20, Matched: 20}}}
	other := Measurement{Condition: "loaded", Provider: "local", Rows: []Row{{Scenario: "a", Runs: 20, Matched: 18}}}
	for i, m := range []Measurement{full, other, again} {
		if err := WriteRecord(path, m, i == 2); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	q := rec.Measurements[1]
	if q.Label() != "local, quiet" || len(q.Rows) != 3 || q.Rows[1].Matched != 20 || q.Rows[0].Matched != 20 {
		t.Fatalf("quiet measurement after the partial one: %+v", q)
	}
	if want := "lockcheck debate --count 20; b measured again on 2026-11-26 02:00"; !strings.HasPrefix(q.Command, want) ||
		!strings.HasSuffix(q.Command, "with: lockcheck debate --only b") {
		t.Errorf("command %q, want it to start %q and name the new command", q.Command, want)
	}
	if rec.Measurements[0].Rows[0].Matched != 18 {
		t.Errorf("the loaded measurement changed: %+v", rec.Measurements[0])
	}
}

func TestRecordWrittenBeforeConditionsReadsAsQuietLocal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.json")
	old := `{"measured": "2026-11-22T01:23:02Z", "command": "lockcheck debate --count 10", "rows": [{"scenario": "k2-x", "runs": 10, "matched": 10}]}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Measurements) != 1 || rec.Measurements[0].Label() != "local, quiet" || rec.Measurements[0].Rows[0].Matched != 10 {
		t.Errorf("old record read as %+v", rec.Measurements)
	}
}

func TestRowWithAStatedRatePassesOnlyWhenConsistent(t *testing.T) {
	rows := []Row{
		{Scenario: "always", Runs: 20, Matched: 20},
		{Scenario: "missed-once", Runs: 20, Matched: 19},
		{Scenario: "rate-ok", Runs: 20, Matched: 20, Sometimes: "lost an update", Shown: 3, RateOK: true},
		{Scenario: "rate-off", Runs: 20, Matched: 20, Sometimes: "lost an update", Shown: 15, RateOK: false},
		{Scenario: "error", Runs: 20, Matched: 19, Errors: 1},
	}
	var got []string
	for _, r := range rows {
		if r.Passed() {
			got = append(got, r.Scenario)
		}
	}
	if want := "always rate-ok"; strings.Join(got, " ") != want {
		t.Errorf("passed %v, want %s", got, want)
	}
	var b strings.Builder
	Report{Command: "lockcheck debate", Rows: []Row{{Scenario: "rate-ok", Runs: 1, Matched: 1, Sometimes: "lost an update",
		Shown: 1, RateOK: true, Rate: "3/20 (accepted 0–35%)"}}}.Markdown(&b)
	if want := "yes; lost an update in 1/1, consistent with its rate 3/20 (accepted 0–35%)"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
}
