package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockcheck/lockcheck/history/synth"
	_ "github.com/lockcheck/lockcheck/services/all"
)

// A baseline's runs whose folders are still there are judged again by this checker: a matrix.json
// written by an earlier release, which recorded a status and no acquisitions, gets both from the
// run's history; a run whose folder is gone keeps what was recorded.
func TestReadBaselineJudgesItsRunsAgain(t *testing.T) {
	results := t.TempDir()
	run := filepath.Join(results, "matrix-set-nx-px-none", "20260101T000000.000")
	if _, err := synth.WriteRun(run, synth.Options{Events: 2000}); err != nil {
		t.Fatal(err)
	}
	old := &Matrix{Locks: []string{"set-nx-px"}, Faults: []string{"none", "kill-holder"}, ResultsDir: results, Cells: []Cell{
		{Lock: "set-nx-px", Fault: "none", Outcomes: []Outcome{{Status: Unsafe, Dir: run}}},
		{Lock: "set-nx-px", Fault: "kill-holder", Outcomes: []Outcome{{Status: Stuck, Dir: filepath.Join(results, "gone")}}},
	}}
	for i := range old.Cells {
		old.Cells[i].summarise()
	}
	dir := filepath.Join(results, "matrix", "20260101T000000.000")
	os.MkdirAll(dir, 0o755)
	b, _ := json.Marshal(old)
	os.WriteFile(filepath.Join(dir, JSONFile), b, 0o644)

	for _, path := range []string{filepath.Join(dir, JSONFile), dir, results} {
		m, again, recorded, err := ReadBaseline(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if again != 1 || recorded != 1 {
			t.Errorf("%s: %d judged again, %d as recorded; want 1 and 1", path, again, recorded)
		}
		none, _ := m.Cell("set-nx-px", "none")
		if none.Status != Safe || none.Outcomes[0].Acquisitions == 0 || none.Outcomes[0].Dir != run {
			t.Errorf("%s: the run judged again: %+v, want safe with its acquisitions and folder", path, none.Outcomes[0])
		}
		if kill, _ := m.Cell("set-nx-px", "kill-holder"); kill.Status != Stuck {
			t.Errorf("%s: a run without its folder: %s, want stuck as recorded", path, kill.Status)
		}
	}
	if _, _, _, err := ReadBaseline(filepath.Join(results, "nothing")); err == nil {
		t.Error("a folder without a matrix: no error")
	}
}
