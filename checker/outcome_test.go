package checker

import (
	"strings"
	"testing"
)

func intact() RegisterVerdict {
	return RegisterVerdict{Applicable: true, Linearizable: Yes, LostUpdatesKnown: true}
}

func lost(n int) RegisterVerdict {
	return RegisterVerdict{Applicable: true, Linearizable: No, LostUpdates: n, LostUpdatesKnown: true}
}

// One rule decides every report's word for a run: the lock failed when two clients held it at
// once or the unfenced register lost data; a register that checks tokens and stayed correct then
// rescues it; a run that never acquired proves nothing.
func TestJudgeGivesOneOutcomePerVerdict(t *testing.T) {
	held := MutualExclusion{Holds: true}
	overlap := MutualExclusion{Windows: []Overlap{{Clients: [2]string{"client-1", "client-2"}}}}
	live := Liveness{Acquisitions: 20}
	cases := []struct {
		name     string
		v        Verdict
		want     Outcome
		rescuers string
		headline string
	}{
		{"safe", Verdict{MutualExclusion: held, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": intact(), "fenced-rw": intact()}},
			Safe, "", "Safe:"},
		{"double ownership, nothing lost, no " +
			"fencing", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": intact()}},
			Unsafe, "", "two clients believed"},
		// Whether the stale holder's write landed before its own check noticed is the run's luck:
		// the fenced registers' verdict is not.
		{"double ownership the fenced registers stayed correct through is rescued, lost update or not", Verdict{MutualExclusion: overlap,
			Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": intact(), "fenced-rw": intact(), "cas-random": intact()}},
			Rescued, "cas-random,fenced-rw", "the unfenced one lost nothing this time"},
		{"double ownership rescued", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{
			"unfenced": lost(1), "fenced-write": lost(1), "fenced-rw": intact()}}, Rescued, "fenced-rw", "fencing kept the data correct (fenced-rw)"},
		{"data lost without double ownership", Verdict{MutualExclusion: held, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": lost(2)}},
			Unsafe, "", "lost updates"},
		{"every register " +
			"lost", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": lost(1), "fenced-rw": lost(1)}},
			Unsafe, "", "Unsafe"},
		{"stuck", Verdict{MutualExclusion: held, Liveness: Liveness{Acquisitions: 3, Stuck: true},
			Registers: map[string]RegisterVerdict{"unfenced": intact()}},
			Stuck, "", "stuck"},
		{"nobody acquired", Verdict{MutualExclusion: held, Inconclusive: "no client ever acquired the lock",
			Registers: map[string]RegisterVerdict{"unfenced": intact()}}, Inconclusive, "", "Inconclusive: no client ever acquired"},
		{"a register nobody used does not rescue", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{
			"unfenced": lost(1), "fenced-rw": {Linearizable: NotApplicable}}}, Unsafe, "", "Unsafe"},
	}
	for _, c := range cases {
		j := Judge(c.v)
		if j.Outcome != c.want || strings.Join(j.Rescuers, ",") != c.rescuers {
			t.Errorf("%s: %s rescued by %v, want %s by %q", c.name, j.Outcome, j.Rescuers, c.want, c.rescuers)
		}
		if h := Headline(c.v); !strings.Contains(h, c.headline) {
			t.Errorf("%s: headline %q, want it to say %q", c.name, h, c.headline)
		}
	}
}

// Collateral damage makes an otherwise safe run damaged, never a failed one better; a lock that
// fails with no fault at all is unsafe even when fencing kept the data.
func TestJudgeDamagedAndFaultFree(t *testing.T) {
	held := MutualExclusion{Holds: true}
	overlap := MutualExclusion{Windows: []Overlap{{Clients: [2]string{"client-1", "client-2"}}}}
	live := Liveness{Acquisitions: 20}
	ok := map[string]RegisterVerdict{"unfenced": intact(), "fenced-rw": intact()}
	rescuable := map[string]RegisterVerdict{"unfenced": lost(1), "fenced-rw": intact()}
	hurt := Collateral{FailedReleases: 2, FailedByClient: map[string]int{"client-1": 2}}
	cases := []struct {
		name     string
		v        Verdict
		want     Outcome
		headline string
	}{
		{"failed releases", Verdict{MutualExclusion: held, Liveness: live, Registers: ok, Collateral: hurt},
			Damaged, "Damaged: mutual exclusion held and no update was lost, but the lock harmed its rightful users (2 failed releases)"},
		{"token anomaly", Verdict{MutualExclusion: held, Liveness: live, Registers: ok, Collateral: Collateral{TokenAnomalies: 1, SameToken: 1}},
			Damaged, "1 token anomaly (same token as an earlier holder)"},
		{"stuck outranks damaged", Verdict{MutualExclusion: held, Liveness: Liveness{Acquisitions: 3, Stuck: true}, Registers: ok, Collateral: hurt},
			Stuck, "stuck"},
		{"rescued outranks damaged, and says it", Verdict{MutualExclusion: overlap, Liveness: live, Registers: rescuable, Collateral: hurt},
			Rescued, "(fenced-rw); also 2 failed releases"},
		{"no fault: fencing is no rescue", Verdict{MutualExclusion: overlap, Liveness: live, Registers: rescuable, FaultFree: true},
			Unsafe, "with no fault at all; fencing kept the data correct (fenced-rw), but that is no rescue"},
		{"no fault and nothing failed", Verdict{MutualExclusion: held, Liveness: live, Registers: ok, FaultFree: true}, Safe, "Safe:"},
	}
	for _, c := range cases {
		if j := Judge(c.v); j.Outcome != c.want {
			t.Errorf("%s: %s, want %s", c.name, j.Outcome, c.want)
		}
		if h := Headline(c.v); !strings.Contains(h, c.headline) {
			t.Errorf("%s: headline %q, want it to say %q", c.name, h, c.headline)
		}
	}
}

// The strict order: safe < damaged < starved < rescued < stuck < inconclusive < unsafe < broken.
func TestOutcomeOrder(t *testing.T) {
	order := []Outcome{Safe, Damaged, Starved, Rescued, Stuck, Inconclusive, Unsafe, Broken}
	if got := OutcomeNames(); got != "safe, damaged, starved, rescued, stuck, inconclusive, unsafe, broken" {
		t.Errorf("OutcomeNames: %q", got)
	}
	for i, a := range order {
		if Rank(a) != i {
			t.Errorf("Rank(%s) = %d, want %d", a, Rank(a), i)
		}
		for j, b := range order {
			if AtLeast(a, b) != (i <= j) {
				t.Errorf("AtLeast(%s, %s) = %t, want %t", a, b, AtLeast(a, b), i <= j)
			}
		}
		if AtLeast(a, "n/a") || AtLeast("error", a) {
			t.Errorf("words outside the order must never meet it (%s)", a)
		}
	}
	if _, err := ParseOutcome("rescue"); err == nil || !strings.Contains(err.Error(), "valid outcomes, best first: safe, damaged, starved, rescued") {
		t.Errorf("ParseOutcome(rescue): %v", err)
	}
}

// The order line and the meanings come from Outcomes: every outcome has a meaning, in order.
func TestOrderLineAndMeanings(t *testing.T) {
	if got, want := OrderLine(), "safe < damaged < starved < rescued < stuck < inconclusive < unsafe < broken"; got != want {
		t.Errorf("OrderLine() = %q, want %q", got, want)
	}
	for i, o := range BestFirst() {
		if Rank(o) != i {
			t.Errorf("BestFirst()[%d] = %s, of rank %d", i, o, Rank(o))
		}
		if Meaning(o) == "" {
			t.Errorf("%s has no meaning", o)
		}
	}
	if len(meanings) != len(Outcomes) || Meaning("n/a") != "" {
		t.Errorf("meanings of %d words for %d outcomes", len(meanings), len(Outcomes))
	}
}
