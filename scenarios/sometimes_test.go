package scenarios

import (
	"strings"
	"testing"
)

// A stated rate accepts the counts it makes plausible and rejects the ones it makes improbable,
// on each side; with one run almost anything is plausible.
func TestStatedRateJudgesCountsOfRuns(t *testing.T) {
	s := &Sometimes{Rate: "3/20", Tolerance: 0.1}
	s.validate(func(field, format string, a ...any) {})
	for _, c := range []struct {
		seen, runs int
		want       bool
	}{
		{0, 1, true}, {1, 1, true}, // one run proves nothing either way
		{3, 20, true}, {0, 20, true}, {8, 20, true}, // within or near the range [5%, 25%]
		{12, 20, false}, {20, 20, false}, // far too often
		{0, 200, false}, // never, over many runs: too rarely
	} {
		if got := s.Consistent(c.seen, c.runs); got != c.want {
			t.Errorf("%d of %d runs: consistent = %v, want %v", c.seen, c.runs, got, c.want)
		}
	}
}

func TestSometimesBlockErrorsNameTheField(t *testing.T) {
	src := `name: x
lock: set-nx-px
clients: 2
ttl: 1s
duration: 2s
sometimes:
  rate: 30/20
  tolerance: 2
expect:
  mutual_exclusion: holds
`
	_, err := Parse("x.yaml", []byte(src))
	if err == nil {
		t.Fatal("a bad sometimes block loaded")
	}
	for _, want := range []string{"x.yaml:7: sometimes.rate:", "x.yaml:8: sometimes.tolerance:", "sometimes.what: missing", "sometimes.expect: missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
