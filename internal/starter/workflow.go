package starter

import (
	"fmt"
	"path/filepath"
	"strings"
)

// workflow is the starter set's GitHub Actions workflow: install the servers and libraries the
// checks need from the runner's Debian-family packages and lockcheck itself with go install, run
// every check as a gate, and keep the run folders (history, verdict, report.html) as an artifact
// whatever the outcome.
func workflow(k Kit, o Options) []byte {
	version := o.Version
	if version == "" {
		version = "latest"
	}
	dir := filepath.ToSlash(filepath.Clean(o.Dir))
	packages := append([]string{"redis-server", "libfaketime"}, k.debian...)
	var gate string
	if k.Lang == "go" {
		gate = fmt.Sprintf(`      - name: Gate — every check in %[1]s/ must reach a verdict it accepts
        run: go test -count=1 -timeout 20m ./%[1]s/
        env:
          LOCKCHECK_RESULTS: ${{ github.workspace }}/results
`, dir)
	} else {
		gate = fmt.Sprintf(`      - name: Install lockcheck
        run: go install github.com/lockcheck/lockcheck/cmd/lockcheck@%[2]s
      - name: Gate — every scenario in %[1]s/scenarios/ must reach the verdict its file expects
        run: |
          status=0
          for s in %[1]s/scenarios/*.yaml; do
            lockcheck run --results results --junit "results/junit-$(basename "$s" .yaml).xml" "$s" || status=1
          done
          exit "$status"
`, dir, version)
	}
	return []byte(`# lockcheck: our lock against real servers under real faults, on every push (written by
# lockcheck init). Every check must reach the verdict it requires: the control must be right on its
# own, and under each fault the data fencing protects must stay right. The run folders — each
# run's history, verdict and report.html (open it offline) — are kept as an artifact.
name: lockcheck

on:
  push:
  pull_request:

jobs:
  lockcheck:
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version: stable
      - name: Install the servers and libraries the checks run (lockcheck starts its own servers)
        run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ` + strings.Join(packages, " ") + `
` + gate + `      - name: Keep the run folders
        if: ${{ !cancelled() }}
        uses: actions/upload-artifact@v4
        with:
          name: lockcheck-runs
          path: results/
          if-no-files-found: ignore
`)
}
