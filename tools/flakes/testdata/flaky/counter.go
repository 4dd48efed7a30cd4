// Package flaky is a fixture for the flakes command's test: tests that fail on some runs only.
// Each test counts its runs in a file under $FLAKES_FIXTURE_DIR.
package flaky

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Bump increments the run counter named name and returns its new value (1 on the first run).
func Bump(name string) int {
	dir := os.Getenv("FLAKES_FIXTURE_DIR")
	if dir == "" {
		panic("FLAKES_FIXTURE_DIR is not set")
	}
	path := filepath.Join(dir, name)
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	n++
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644); err != nil {
		panic(err)
	}
	return n
}
