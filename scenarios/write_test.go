package scenarios

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/nemesis"
)

// Every shipped scenario written as YAML loads back to the same scenario: its text, service and
// schedule. A run folder keeps a built scenario that way, and `lockcheck run` must be able to
// run it again.
func TestShippedScenariosWriteBackToThemselves(t *testing.T) {
	var files []string
	for _, g := range []string{"*.yaml", "*/*.yaml"} {
		f, _ := filepath.Glob(g)
		files = append(files, f...)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d scenario files", len(files))
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		text, err := s.YAML()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		back, err := Parse(f, text)
		if err != nil {
			t.Fatalf("%s written as YAML does not load: %v\n%s", f, err, text)
		}
		again, err := back.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(text) {
			t.Errorf("%s: written, loaded and written again differs:\n%s\nthen\n%s", f, text, again)
		}
		samePlan(t, f, s, back)
		if !reflect.DeepEqual(s.Schedule(), back.Schedule()) {
			t.Errorf("%s: schedule %+v, loaded back %+v", f, s.Schedule(), back.Schedule())
		}
	}
}

func samePlan(t *testing.T, name string, a, b *Scenario) {
	t.Helper()
	pa, pb := *a.Plan(), *b.Plan()
	// The design holds functions (never equal) and the server block keeps its lines: compare
	// what the design and the block were made into.
	if a.Design().Name != b.Design().Name {
		t.Errorf("%s: design %s, loaded back %s", name, a.Design().Name, b.Design().Name)
	}
	pa.Spec.Design, pb.Spec.Design = locks.Design{}, locks.Design{}
	pa.Spec.Server, pb.Spec.Server = nil, nil
	if !reflect.DeepEqual(pa, pb) {
		t.Errorf("%s: service %+v, loaded back %+v", name, pa, pb)
	}
}

// A scenario built in Go is checked by the rules a file is: defaults filled in, lengths in TTLs
// resolved, mistakes named by field.
func TestBuiltScenariosAreCheckedAsFilesAre(t *testing.T) {
	s, err := New(Scenario{Name: "built", Lock: "set-nx-px", Clients: 2, TTL: Duration(time.Second),
		Duration: Duration(3 * time.Second), Workload: Workload{Hold: TTLs(0.5)},
		Nemesis: []Entry{{Fault: nemesis.Fault{Kind: "pause", Target: "client-1", Point: "after-acquire", For: TTLs(2)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Hold.D() != 500*time.Millisecond || s.Nemesis[0].For.D() != 2*time.Second || s.Nemesis[0].Occurrence != 1 {
		t.Errorf("lengths or defaults not filled in: hold %v, for %v, occurrence %d", s.Workload.Hold, s.Nemesis[0].For, s.Nemesis[0].Occurrence)
	}
	if s.Workload.AcquireTimeout == 0 || s.Plan() == nil || s.Design().Name != "set-nx-px" {
		t.Errorf("not completed as a loaded scenario is: %+v", s)
	}
	_, err = New(Scenario{Name: "bad", Lock: "set-nx-px", Clients: 2, Duration: Duration(time.Second),
		Nemesis: []Entry{{Fault: nemesis.Fault{Kind: "pause", Target: "client-9", At: Duration(time.Second)}}}})
	for _, want := range []string{"scenario bad: ttl:", "scenario bad: nemesis[0].target:", `no such target "client-9"`, "nemesis[0].at:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}
