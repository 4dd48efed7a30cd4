package matrix

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/locks"
)

var updateGrid = flag.Bool("update-grid", false, "rewrite testdata/grid.sha256 from the cells as they are now built")

// gridFile holds, per design × column, a digest of the cell's scenario as YAML (seed 1). It was
// first written from the YAML text the cells were built from before they were built as values.
const gridFile = "testdata/grid.sha256"

func cellDigest(text []byte) string { return fmt.Sprintf("%x", sha256.Sum256(text)) }

// The grid's scenarios are the ones recorded: a column that changes what a cell runs changes its
// digest (then rewrite the file on purpose: go test ./matrix -run TestGridIsUnchanged -update-grid).
// Designs added since are not in the file and not checked.
func TestGridIsUnchanged(t *testing.T) {
	if *updateGrid {
		var b strings.Builder
		for _, d := range locks.All() {
			for _, f := range Faults {
				if sc, na, err := cellScenario(d, f, 1); na == "" && err == nil {
					text, _ := sc.YAML()
					fmt.Fprintf(&b, "%s %s %s\n", d.Name, f.Name, cellDigest(text))
				}
			}
		}
		if err := os.WriteFile(filepath.FromSlash(gridFile), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile(filepath.FromSlash(gridFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(src)), "\n")
	if len(lines) < 300 {
		t.Fatalf("%s holds %d cells", gridFile, len(lines))
	}
	for _, line := range lines {
		var lock, fault, want string
		if _, err := fmt.Sscan(line, &lock, &fault, &want); err != nil {
			t.Fatalf("%s: %q: %v", gridFile, line, err)
		}
		d, err := locks.Get(lock)
		if err != nil {
			t.Errorf("%s: %v", gridFile, err)
			continue
		}
		f, err := faultNamed(fault)
		if err != nil {
			t.Errorf("%s: %v", gridFile, err)
			continue
		}
		sc, na, err := cellScenario(d, f, 1)
		if na != "" || err != nil {
			t.Errorf("%s × %s: recorded, now n/a %q or failing: %v", lock, fault, na, err)
			continue
		}
		if text, _ := sc.YAML(); cellDigest(text) != want {
			t.Errorf("%s × %s: the cell's scenario changed; it is now\n%s", lock, fault, text)
		}
	}
}
