package checker

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func ptr[T any](v T) *T { return &v }

func TestExpectDecodesFromTheScenarioYAML(t *testing.T) {
	src := `
mutual_exclusion: violated
registers:
  unfenced: {linearizable: false, lost_updates: true}
  fenced-rw: {applicable: false}
liveness: {stuck: false, min_acquisitions: 10}
`
	var e Expect
	if err := yaml.Unmarshal([]byte(src), &e); err != nil {
		t.Fatal(err)
	}
	want := Expect{
		MutualExclusion: "violated",
		Registers: map[string]RegisterExpect{
			"unfenced":  {Linearizable: ptr(false), LostUpdates: ptr(true)},
			"fenced-rw": {Applicable: ptr(false)},
		},
		Liveness: &LivenessExpect{Stuck: ptr(false), MinAcquisitions: ptr(10)},
	}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("decoded %+v, want %+v", e, want)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejectsBadExpectations(t *testing.T) {
	tests := []struct {
		name    string
		expect  Expect
		wantErr string // "" = valid
	}{
		{"empty is valid", Expect{}, ""},
		{"holds is valid", Expect{MutualExclusion: "holds"}, ""},
		{"an unknown mutual exclusion value names the field and the valid values",
			Expect{MutualExclusion: "maybe"}, `expect.mutual_exclusion: "maybe" is not one of "holds", "violated"`},
		{"a negative minimum of acquisitions",
			Expect{Liveness: &LivenessExpect{MinAcquisitions: ptr(-1)}}, "expect.liveness.min_acquisitions"},
		{"linearizability of a register expected not applicable",
			Expect{Registers: map[string]RegisterExpect{"fenced-rw": {Applicable: ptr(false), Linearizable: ptr(true)}}},
			"expect.registers.fenced-rw"},
		{"a register without a name",
			Expect{Registers: map[string]RegisterExpect{"": {Linearizable: ptr(true)}}}, "empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.expect.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMatchReportsMismatchesAndAcceptsMatches(t *testing.T) {
	final := int64(6)
	v := Verdict{
		MutualExclusion: MutualExclusion{Holds: false},
		Registers: map[string]RegisterVerdict{
			"unfenced":     {Applicable: true, Linearizable: No, AckedIncrements: 7, Final: &final, LostUpdates: 1, LostUpdatesKnown: true},
			"fenced-write": {Applicable: true, Linearizable: Unknown, LostUpdatesKnown: false},
			"fenced-rw":    {Applicable: false, Linearizable: NotApplicable},
		},
		Liveness: Liveness{Acquisitions: 12, Stuck: false},
	}
	tests := []struct {
		name   string
		expect Expect
		want   []Mismatch
	}{
		{"nothing expected matches anything", Expect{}, nil},
		{
			name: "the run's actual outcome matches",
			expect: Expect{
				MutualExclusion: "violated",
				Registers: map[string]RegisterExpect{
					"unfenced":  {Linearizable: ptr(false), LostUpdates: ptr(true), Applicable: ptr(true)},
					"fenced-rw": {Applicable: ptr(false)},
					"absent":    {Applicable: ptr(false)},
				},
				Liveness: &LivenessExpect{Stuck: ptr(false), MinAcquisitions: ptr(12)},
			},
		},
		{
			name: "every unmet expectation is reported",
			expect: Expect{
				MutualExclusion: "holds",
				Registers: map[string]RegisterExpect{
					"unfenced":  {Linearizable: ptr(true), LostUpdates: ptr(false)},
					"fenced-rw": {Applicable: ptr(true)},
				},
				Liveness: &LivenessExpect{Stuck: ptr(true), MinAcquisitions: ptr(13)},
			},
			want: []Mismatch{
				{"inconclusive", "a run that proves something", "only 12 acquisitions, fewer than the 13 the scenario needs (liveness.min_acquisitions)"},
				{"mutual_exclusion", "holds", "violated"},
				{"registers.fenced-rw.applicable", "true", "false"},
				{"registers.unfenced.linearizable", "yes", "no"},
				{"registers.unfenced.lost_updates", "false", "true (1 lost)"},
				{"liveness.stuck", "true", "false"},
				{"liveness.min_acquisitions", "13", "12"},
			},
		},
		{
			name: "unknown linearizability and unknown lost updates never match",
			expect: Expect{Registers: map[string]RegisterExpect{
				"fenced-write": {Linearizable: ptr(true), LostUpdates: ptr(false)},
			}},
			want: []Mismatch{
				{"registers.fenced-write.linearizable", "yes", "unknown"},
				{"registers.fenced-write.lost_updates", "false", "unknown (no final value)"},
			},
		},
		{
			name:   "a non-applicable register is neither linearizable nor not",
			expect: Expect{Registers: map[string]RegisterExpect{"fenced-rw": {Linearizable: ptr(true)}}},
			want:   []Mismatch{{"registers.fenced-rw.linearizable", "yes", "n/a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.expect.Match(v); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mismatches:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestUnknownLinearizabilityFailsAnExpectationEndToEnd(t *testing.T) {
	v := Check(hardIllegalHistory(), Options{LinearizabilityTimeout: 20 * time.Millisecond})
	for _, want := range []bool{true, false} {
		e := Expect{Registers: map[string]RegisterExpect{"unfenced": {Linearizable: ptr(want)}}}
		missed := false
		for _, m := range e.Match(v) {
			missed = missed || m.Field == "registers.unfenced.linearizable"
		}
		if !missed {
			t.Errorf("linearizable: %v matched a verdict of %q", want, v.Registers["unfenced"].Linearizable)
		}
	}
}

// overlaps_only_with passes overlaps with the named (frozen) client and flags one between two
// others: the difference between a lease overrun (K2) and a lock that frees another's hold.
func TestOverlapsOnlyWithFlagsOverlapsBetweenOtherClients(t *testing.T) {
	e := Expect{MutualExclusion: "violated", OverlapsOnlyWith: []string{"client-1"}}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	withPaused := Overlap{Clients: [2]string{"client-1", "client-3"}, Length: 400 * time.Millisecond}
	between := Overlap{Clients: [2]string{"client-2", "client-3"}, Length: 12 * time.Millisecond, Offset: 2100 * time.Millisecond}
	v := Verdict{MutualExclusion: MutualExclusion{Holds: false, Windows: []Overlap{withPaused}}}
	if m := e.Match(v); len(m) != 0 {
		t.Fatalf("an overlap with the paused client was flagged: %v", m)
	}
	v.MutualExclusion.Windows = append(v.MutualExclusion.Windows, between)
	m := e.Match(v)
	if len(m) != 1 || m[0].Field != "overlaps_only_with" || !strings.Contains(m[0].Got, "client-2 and client-3, 12ms at 2.1s") {
		t.Fatalf("want one mismatch naming client-2 and client-3, got %v", m)
	}
	bad := Expect{MutualExclusion: "holds", OverlapsOnlyWith: []string{"client-1"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "expect.overlaps_only_with") {
		t.Fatalf("overlaps_only_with with holds: want an error naming the field, got %v", err)
	}
}

func TestCollateralExpect(t *testing.T) {
	var e Expect
	src := "collateral: {max_failed_releases: 0, max_legit_rejections: 2, min_token_anomalies: 1}\n"
	if err := yaml.Unmarshal([]byte(src), &e); err != nil {
		t.Fatal(err)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	v := Verdict{MutualExclusion: MutualExclusion{Holds: true}, Liveness: Liveness{Acquisitions: 5},
		Collateral: Collateral{FailedReleases: 1, FailedByClient: map[string]int{"client-2": 1}, LegitRejections: 2}}
	got := e.Match(v)
	want := []Mismatch{{"collateral.max_failed_releases", "0", "1 (client-2 1)"}, {"collateral.min_token_anomalies", "1", "0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mismatches %v, want %v", got, want)
	}
	v.Collateral = Collateral{TokenAnomalies: 2, LowerToken: 2}
	if got := e.Match(v); len(got) != 0 {
		t.Errorf("within bounds: %v", got)
	}
	for src, wantErr := range map[string]string{
		"collateral: {max_failed_releases: -1}":                          "expect.collateral.max_failed_releases: -1 is negative",
		"collateral: {min_legit_rejections: 3, max_legit_rejections: 1}": "expect.collateral.min_legit_rejections: 3 is above max_legit_rejections 1",
	} {
		var e Expect
		if err := yaml.Unmarshal([]byte(src), &e); err != nil {
			t.Fatal(err)
		}
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", src, err, wantErr)
		}
	}
}
