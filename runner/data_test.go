package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/scenarios"
)

// A run that passed keeps its server's log but not its data folder (PostgreSQL's is about 28 MB a
// run); --keep-data (Options.KeepData) keeps it, and so does a run whose verdict missed.
func TestPassedRunLeavesTheServersDataOut(t *testing.T) {
	if testing.Short() {
		t.Skip("real PostgreSQL")
	}
	src, err := os.ReadFile("../scenarios/no-faults-pg-advisory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name           string
		keep, miss     bool
		wantData, pass bool
	}{
		{name: "passed", pass: true},
		{name: "keep-data", keep: true, wantData: true, pass: true},
		{name: "missed", miss: true, wantData: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := string(src)
			if c.miss {
				text = strings.Replace(text, "stuck: false", "stuck: true", 1) // a control is never stuck: the verdict misses
			}
			path := filepath.Join(t.TempDir(), "pg.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			o := testOptions(t)
			o.KeepData = c.keep
			res, err := Run(context.Background(), sc, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Matches != c.pass {
				t.Fatalf("matches %v, want %v: %v", res.Matches, c.pass, res.Mismatches)
			}
			server := filepath.Join(res.Dir, "servers", "db1")
			if _, err := os.Stat(filepath.Join(server, "postgres.log")); err != nil {
				t.Errorf("the server's log is gone: %v", err)
			}
			_, err = os.Stat(filepath.Join(server, "data", "PG_VERSION"))
			if has := err == nil; has != c.wantData {
				t.Errorf("data folder kept: %v, want %v (run folder %s)", has, c.wantData, res.Dir)
			}
		})
	}
}
