package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history/synth"
	"github.com/lockcheck/lockcheck/scenarios"
)

// Judge writes porcupine's page only for a register found not linearizable, showing the piece
// that is not, and removes pages an earlier judging left for registers that now pass.
func TestJudgeWritesPorcupinePagesOnlyForRegistersThatFail(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.WriteRun(dir, synth.Options{Events: 30000, StaleReadAt: 0.7, UnknownAt: 0.05}); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "linearizability-fenced-rw.html")
	if err := os.WriteFile(stale, []byte("from an earlier judging"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Judge(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.ReportError != nil {
		t.Fatalf("report: %v", res.ReportError)
	}
	unfenced := res.Verdict.Registers["unfenced"]
	if unfenced.Linearizable != checker.No || unfenced.Piece == nil || res.Matches {
		t.Fatalf("the stale read is not found: %+v", unfenced)
	}
	page, err := os.Stat(filepath.Join(dir, "linearizability-unfenced.html"))
	if err != nil {
		t.Fatalf("no porcupine page for the register that failed: %v", err)
	}
	if page.Size() > 2<<20 {
		t.Errorf("porcupine's page of one piece is %d bytes", page.Size())
	}
	for _, reg := range []string{"fenced-rw", "fenced-write", "cas-random"} {
		if _, err := os.Stat(filepath.Join(dir, "linearizability-"+reg+".html")); err == nil {
			t.Errorf("a porcupine page for %s, which is linearizable", reg)
		}
	}
}

// A waiter's first attempt surely keeps its place for the attempt's length (four command
// timeouts, or the acquire timeout if shorter) less the command timeout a client may keep to
// leave the line; never 0, which the checker reads as for good.
func TestKeepsPlaceIsTheFirstAttemptLessACommandTimeout(t *testing.T) {
	for _, c := range []struct{ timeout, acquire, want time.Duration }{
		{250 * time.Millisecond, 3 * time.Second, 750 * time.Millisecond},    // the matrix: attempts of 1 s
		{2500 * time.Millisecond, 10 * time.Second, 7500 * time.Millisecond}, // fairness-*: one attempt of 10 s
		{250 * time.Millisecond, 600 * time.Millisecond, 350 * time.Millisecond},
		{250 * time.Millisecond, 200 * time.Millisecond, time.Millisecond},
	} {
		sc := &scenarios.Scenario{Workload: scenarios.Workload{Timeout: scenarios.Duration(c.timeout), AcquireTimeout: scenarios.Duration(c.acquire)}}
		if got := keepsPlace(sc); got != c.want {
			t.Errorf("timeout %v, acquire timeout %v: %v, want %v", c.timeout, c.acquire, got, c.want)
		}
	}
}
