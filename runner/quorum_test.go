package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/scenarios"
)

// Redlock runs on three Redis primaries as many deployments do, not only on its default five, and
// its control reaches the control's verdict there.
func TestRedlockOnThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("real Redis")
	}
	src, err := os.ReadFile("../scenarios/no-faults-redlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "\nnodes: 5\n", "\nnodes: 3\n", 1)
	path := filepath.Join(t.TempDir(), "redlock-3.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.NodeNames(); len(got) != 3 {
		t.Fatalf("nodes %v, want n1..n3", got)
	}
	res, err := Run(context.Background(), sc, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Matches || res.Verdict.Outcome != "safe" {
		t.Fatalf("outcome %s, mismatches %v: %s (run folder %s)", res.Verdict.Outcome, res.Mismatches, res.Verdict.Summary, res.Dir)
	}
}
