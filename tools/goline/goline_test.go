// Package goline's test keeps go.mod's go line at the oldest Go that lockcheck's dependencies
// allow: a project that imports lockchecktest must have a go line at least as new as lockcheck's,
// so a newer one than needed forces a newer toolchain on it for nothing.
package goline

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goCmd runs the go tool in the repository's root and returns its standard output.
func goCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// newer reports whether Go version a ("1.26", "1.26.8", "1.23rc1") is newer than b.
func newer(a, b string) bool {
	num := func(v string) []int {
		var out []int
		for f := range strings.SplitSeq(v, ".") {
			n, _ := strconv.Atoi(strings.TrimRightFunc(f, func(r rune) bool { return r < '0' || r > '9' }))
			out = append(out, n)
		}
		for len(out) < 3 {
			out = append(out, 0)
		}
		return out
	}
	x, y := num(a), num(b)
	for i := range 3 {
		if x[i] != y[i] {
			return x[i] > y[i]
		}
	}
	return false
}

// The go line is the newest go line among the modules of the build list, no newer: what every
// dependency needs and nothing more. go mod tidy keeps it (it raises a go line, never lowers one).
func TestGoLineIsTheOldestTheDependenciesAllow(t *testing.T) {
	var mod struct{ Go string }
	if err := json.Unmarshal(goCmd(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(goCmd(t, "list", "-m", "-json", "all"))))
	need, by := "1.0", ""
	for {
		var m struct {
			Path, GoVersion string
			Main            bool
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !m.Main && m.GoVersion != "" && newer(m.GoVersion, need) {
			need, by = m.GoVersion, m.Path
		}
	}
	t.Logf("go.mod says go %s; the newest a dependency needs is %s (%s)", mod.Go, need, by)
	switch {
	case newer(need, mod.Go):
		t.Errorf("go.mod's go line %s is older than %s needs (%s)", mod.Go, by, need)
	case newer(mod.Go, need):
		t.Errorf("go.mod's go line %s is newer than any dependency needs (%s, %s): set it to go %s", mod.Go, by, need, need)
	}
	if diff := goCmd(t, "mod", "tidy", "-diff"); len(diff) > 0 {
		t.Errorf("go mod tidy would change go.mod or go.sum:\n%s", diff)
	}
}
