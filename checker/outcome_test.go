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
		{"double ownership, nothing lost, no fencing", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": intact()}},
			Unsafe, "", "two clients believed"},
		{"double ownership that lost nothing is unsafe, fencing or not", Verdict{MutualExclusion: overlap, Liveness: live,
			Registers: map[string]RegisterVerdict{"unfenced": intact(), "fenced-rw": intact(), "cas-random": intact()}},
			Unsafe, "", "two clients believed"},
		{"double ownership rescued", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{
			"unfenced": lost(1), "fenced-write": lost(1), "fenced-rw": intact()}}, Rescued, "fenced-rw", "fencing kept the data correct (fenced-rw)"},
		{"data lost without double ownership", Verdict{MutualExclusion: held, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": lost(2)}},
			Unsafe, "", "lost updates"},
		{"every register lost", Verdict{MutualExclusion: overlap, Liveness: live, Registers: map[string]RegisterVerdict{"unfenced": lost(1), "fenced-rw": lost(1)}},
			Unsafe, "", "Unsafe"},
		{"stuck", Verdict{MutualExclusion: held, Liveness: Liveness{Acquisitions: 3, Stuck: true}, Registers: map[string]RegisterVerdict{"unfenced": intact()}},
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
