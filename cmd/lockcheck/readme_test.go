package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's sample of make run with the output of a real run")

const (
	readmePath = "../../README.md"
	// sampleOpens is the line that opens the README's sample, inside a code block.
	sampleOpens = "$ make run"
	// firstScreen is how many lines of the README a reader sees first: the two commands, their
	// times, what lockcheck is and the sample must all fit.
	firstScreen = 40
)

// readmeSample returns README.md's lines and where the sample's output is in them: lines[from:to],
// after the "$ make run" line and before the code block's closing fence.
func readmeSample(t *testing.T) (lines []string, from, to int) {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(string(b), "\n")
	from = slices.Index(lines, sampleOpens) + 1
	if from < 2 || lines[from-2] != "```" {
		t.Fatalf("%s: no code block opening with the line %q", readmePath, sampleOpens)
	}
	to = from + slices.Index(lines[from:], "```")
	if to < from {
		t.Fatalf("%s: the code block of %q does not close", readmePath, sampleOpens)
	}
	return lines, from, to
}

var (
	// tableHeader is a table's first line: a first cell, then the gap of at least two spaces that
	// the verdict's tables put between columns.
	tableHeader = regexp.MustCompile(`^\S+ {2,}\S`)
	// tableRow is a header-like line or one whose first cell is empty.
	tableRow = regexp.MustCompile(`^\S+ {2,}\S|^ +\S`)
	cellGap  = regexp.MustCompile(` {2,}`)
	number   = regexp.MustCompile(`\d+(\.\d+)?[a-zµ%]*`)
)

// outputShape is what the README's sample must share with a real run of its scenario: the kind of
// each line, not its figures, which vary from run to run. A table (a header after a blank line,
// then the rows aligned under it) is its header, numbers masked, and the set of its rows' names
// ("-" for a row without one); any other line is its first word, "" when blank and "(indented)"
// when indented. Consecutive lines of one kind count once, so a line repeated for each double
// ownership does not make the shape depend on how many there were.
func outputShape(out string) []string {
	var shape []string
	add := func(kind string) {
		if len(shape) == 0 || shape[len(shape)-1] != kind {
			shape = append(shape, kind)
		}
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " ")
		switch {
		case line == "":
			add("")
		case (i == 0 || strings.TrimSpace(lines[i-1]) == "") && tableHeader.MatchString(line):
			var rows []string
			for i+1 < len(lines) && tableRow.MatchString(lines[i+1]) {
				i++
				name := cellGap.Split(lines[i], 2)[0]
				if name == "" {
					name = "-"
				}
				if !slices.Contains(rows, name) {
					rows = append(rows, name)
				}
			}
			slices.Sort(rows)
			add("table: " + strings.Join(cellGap.Split(number.ReplaceAllString(line, "#"), -1), " | "))
			add("rows: " + strings.Join(rows, " "))
		case line[0] == ' ':
			add("(indented)")
		default:
			add(strings.Fields(line)[0])
		}
	}
	return shape
}

// runFirstScenario runs make run's scenario with bin and returns what it printed on stdout (the
// progress line, on stderr, is erased in a terminal), with the results folder written "results"
// as make run prints it.
func runFirstScenario(t *testing.T, bin string) string {
	t.Helper()
	results := t.TempDir()
	cmd := exec.Command(bin, "run", "--results", results, "scenarios/debate/k2-set-nx-px.yaml")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != exitMatch {
		t.Fatalf("make run's scenario: exit %d, want %d\n%s%s", code, exitMatch, out, stderr.Bytes())
	}
	return strings.ReplaceAll(string(out), results, "results")
}

// The README's sample of make run has the shape of a real run of its scenario on make run's build:
// the same lines, tables, columns and rows, whatever the figures. A section printed only when it
// has something to show (the collateral table, in about 8 runs of 10) may be missing from one run,
// so the test passes when any of four runs matches. -update-readme rewrites the sample with the
// fullest of three runs.
func TestReadmeSampleIsWhatMakeRunPrints(t *testing.T) {
	lines, from, to := readmeSample(t)
	want := outputShape(strings.Join(lines[from:to], "\n"))
	bin := quickstartLockcheck(t)

	if *updateReadme {
		fullest := ""
		for range 3 {
			if out := runFirstScenario(t, bin); strings.Count(out, "\n") > strings.Count(fullest, "\n") {
				fullest = out
			}
		}
		updated := slices.Concat(lines[:from], strings.Split(strings.TrimRight(fullest, "\n"), "\n"), lines[to:])
		if err := os.WriteFile(readmePath, []byte(strings.Join(updated, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the sample of make run rewritten with a real run's output", readmePath)
		return
	}

	const tries = 4
	var out string
	var got []string
	for try := 1; try <= tries; try++ {
		out = runFirstScenario(t, bin)
		if got = outputShape(out); slices.Equal(got, want) {
			return
		}
		t.Logf("run %d of %d: not the shape of the README's sample", try, tries)
	}
	t.Errorf("%s lines %d-%d, the sample of make run, no longer have the shape of a real run of its scenario.\n"+
		"%s\nA real run printed (paste it under %q, or run go test ./cmd/lockcheck -run %s -update-readme):\n%s",
		readmePath, from+1, to, shapeDiff(want, got), sampleOpens, t.Name(), out)
}

// shapeDiff lists two shapes side by side, marking the lines that differ.
func shapeDiff(readme, run []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-60s  %s\n", "README's sample", "real run")
	for i := range max(len(readme), len(run)) {
		r, g := "(none)", "(none)"
		if i < len(readme) {
			r = fmt.Sprintf("%q", readme[i])
		}
		if i < len(run) {
			g = fmt.Sprintf("%q", run[i])
		}
		mark := " "
		if r != g {
			mark = "≠"
		}
		fmt.Fprintf(&b, "%s %-60s  %s\n", mark, r, g)
	}
	return b.String()
}

// The shape keeps what a reader relies on (which lines, tables, columns and rows) and drops what
// varies from run to run (figures, times, folders, how many lines of one kind).
func TestOutputShapeKeepsTheLinesAndTablesNotTheFigures(t *testing.T) {
	const run = `scenario k2 (K2): lock set-nx-px, 4 client(s), ttl 400ms, 5s
mutual exclusion  VIOLATED: 3 pairs, 1.15s in total
  client-1 and client-2: client-1 outlived its lease

register      linearizable  lost updates  rejected
cas-random    yes           0             2 (1 rightful)
unfenced      no            1             0

liveness  acquisitions  p99
          45            950.1ms

client    acquisitions  starved (over 1.5s, by 43 or more)
client-1  11            no
client-2  14            no

fairness  overtakes  worst wait
          45         950.1ms (client-4 at 3.51 s)
verdict matches expect: 3 pairs of clients
run folder: results/k2/20261128T042448.167
`
	want := []string{
		"scenario", "mutual", "(indented)", "",
		"table: register | linearizable | lost updates | rejected", "rows: cas-random unfenced", "",
		"table: liveness | acquisitions | p#", "rows: -", "",
		"table: client | acquisitions | starved (over #, by # or more)", "rows: client-1 client-2", "",
		"table: fairness | overtakes | worst wait", "rows: -",
		"verdict", "run",
	}
	if got := outputShape(run); !slices.Equal(got, want) {
		t.Fatalf("shape:\n%s", shapeDiff(want, got))
	}

	same := strings.NewReplacer("3 pairs", "2 pairs", "1.15s", "812.4ms", "950.1ms", "1.2s", "45", "39", "11 ", "9 ",
		"(1 rightful)", "            ", "over 1.5s, by 43", "over 2s, by 40", "20261128T042448.167", "20261201T101010.001",
		"  client-1 and client-2: client-1 outlived its lease\n",
		"  client-1 and client-2: client-1 outlived its lease\n  client-3 and client-4: the lock broke its promise\n")
	if got := outputShape(same.Replace(run)); !slices.Equal(got, want) {
		t.Errorf("other figures and one more line of a kind changed the shape:\n%s", shapeDiff(want, got))
	}

	for what, changed := range map[string]string{
		"a table gone":        strings.Replace(run, "\nclient    acquisitions  starved (over 1.5s, by 43 or more)\nclient-1  11            no\nclient-2  14            no\n", "", 1),
		"a register row more": strings.Replace(run, "unfenced      no", "fenced-rw     yes           0             1\nunfenced      no", 1),
		"a column more":       strings.Replace(run, "liveness  acquisitions  p99\n          45            950.1ms", "liveness  acquisitions  p99      stuck\n          45            950.1ms  no", 1),
		"an outcome line":     strings.Replace(run, "verdict matches", "outcome  unsafe\nverdict matches", 1),
		"a line's first word": strings.Replace(run, "run folder:", "folder:", 1),
		"the window line":     strings.Replace(run, "  client-1 and client-2: client-1 outlived its lease\n", "", 1),
	} {
		if got := outputShape(changed); slices.Equal(got, want) {
			t.Errorf("%s: the shape did not change", what)
		}
	}
}

// The README's first screen holds what a new reader needs before scrolling: the two commands
// first (after the title), one line of their times, what lockcheck is, and the sample of make run.
func TestReadmeFirstScreenHoldsCommandsTimesAndSample(t *testing.T) {
	lines, from, to := readmeSample(t)
	if len(lines) < 6 || lines[0] != "# lockcheck" || lines[1] != "" || lines[2] != "```sh" ||
		!strings.HasPrefix(lines[3], "make run ") || !strings.HasPrefix(lines[4], "make test ") || lines[5] != "```" {
		t.Errorf("%s must open with its title and the block of the two commands, make run then make test:\n%s",
			readmePath, strings.Join(lines[:min(6, len(lines))], "\n"))
	}
	timesLine := func(l string) bool { return strings.Contains(l, "make run` ") && strings.Contains(l, "make test` ") }
	if n := len(slices.DeleteFunc(slices.Clone(lines[:from]), func(l string) bool { return !timesLine(l) })); n != 1 {
		t.Errorf("%s: %d lines give the times of make run and make test before the sample, want one", readmePath, n)
	}
	if !slices.ContainsFunc(lines[:from], func(l string) bool { return strings.HasPrefix(l, "lockcheck is ") }) {
		t.Errorf("%s: no paragraph saying what lockcheck is (\"lockcheck is ...\") before the sample", readmePath)
	}
	if to+1 > firstScreen {
		t.Errorf("%s: the sample of make run ends on line %d, past the first screen (%d lines)", readmePath, to+1, firstScreen)
	}
}
