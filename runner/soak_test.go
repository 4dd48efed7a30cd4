package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/scenarios"
)

// --duration runs a scenario longer (or shorter) without touching its file; the copy in the run
// folder says what ran, and still loads.
func TestWithDurationOverridesTheScenariosOwn(t *testing.T) {
	sc, err := scenarios.Load("../scenarios/random-mixed-redlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := withDuration(sc, 0); got != sc || err != nil {
		t.Fatal("no override must leave the scenario as it is")
	}
	long, err := withDuration(sc, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if long.Duration.D() != 30*time.Minute || sc.Duration.D() != 10*time.Second {
		t.Fatalf("override: %s, original now %s", long.Duration.D(), sc.Duration.D())
	}
	path := filepath.Join(t.TempDir(), "random-mixed-redlock.yaml")
	text, err := long.Text()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := scenarios.Load(path)
	if err != nil {
		t.Fatalf("the run folder's copy does not load: %v", err)
	}
	if again.Duration.D() != 30*time.Minute || !strings.Contains(string(text), "the file says 10s") {
		t.Fatalf("the copy says %s:\n%s", again.Duration.D(), text)
	}
}
