package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
)

// Every relative link and anchor in README.md and docs/*.md lands somewhere: the file exists, and
// the anchor is a heading of it as GitHub names it.
func TestEveryDocLinkResolves(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	checked := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		problems, err := Check(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		src, _ := os.ReadFile(f)
		checked += strings.Count(string(src), "](")
	}
	if checked < 100 {
		t.Errorf("only %d links found: is the link pattern right?", checked)
	}
}

// The anchors follow GitHub's rules, and the checker catches a missing file and a missing anchor.
func TestCheckCatchesBrokenLinksAndAnchors(t *testing.T) {
	for heading, want := range map[string]string{
		"Finding violations: random versus hunt":         "finding-violations-random-versus-hunt",
		"A Go lock: package lockchecktest":               "a-go-lock-package-lockchecktest",
		"K2 — a pause":                                   "k2--a-pause",
		"`lockcheck run` and [links](x.md) in a heading": "lockcheck-run-and-links-in-a-heading",
		"Ünïcode_words 2":                                "ünïcode_words-2",
	} {
		if got := Anchor(heading); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", heading, got, want)
		}
	}
	anchors := Anchors("# Title\n## Same\n## Same\n```\n# not a heading\n```\n<a name=\"kept\"></a>\n## The `run` command\n")
	for _, a := range []string{"title", "same", "same-1", "kept", "the-run-command"} {
		if !anchors[a] {
			t.Errorf("no anchor %q in %v", a, anchors)
		}
	}
	if anchors["not-a-heading"] {
		t.Errorf("a heading inside a code block counted")
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n## Part two\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.md"), []byte(`# A
[ok](b.md#part-two) [self](#a) [web](https://example.com/x#y) ![img](b.md)
[gone](c.md) [no anchor](b.md#part-three) [bad self](#nope)
`+"`[in code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"), 0o644)
	problems, err := Check(filepath.Join(dir, "a.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"c.md: no such file", "has no heading with anchor #part-three", "has no heading with anchor #nope"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3:\n%s", len(problems), got)
	}
}

// bestFirst is checker.Outcomes' words, best first, as the docs write them.
func bestFirst() []string {
	var out []string
	for _, o := range checker.BestFirst() {
		out = append(out, string(o))
	}
	return out
}

// No page of docs/ nor the README lists the outcome words other than as checker.Outcomes does:
// all of them, in the strict order (issue 56: lists that had lost broken or starved).
func TestDocsListTheOutcomesInTheCodesOrder(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	full := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ListsOutOfOrder(string(src), bestFirst()) {
			t.Errorf("%s: %s", f, p)
		}
		full += strings.Count(string(src), checker.OrderLine())
	}
	if full == 0 {
		t.Errorf("no page writes the order out as %q (docs/VERDICTS.md, Outcomes)", checker.OrderLine())
	}
}

// A list that dropped a word or moved one is caught, across lines and through markup; the full
// order either way, a sequence of observations that repeats words and prose are not.
func TestListsOutOfOrderCatchesADriftedList(t *testing.T) {
	order := bestFirst()
	for _, drifted := range []string{
		"the strict order safe < damaged < starved < rescued < stuck < inconclusive < unsafe — a gate",
		"Each cell is an outcome (safe, damaged, starved, rescued by which fencing register,\nstuck, inconclusive, unsafe with \"no token\")",
		"**safe** < **damaged** < **rescued** < **starved** < **stuck** <\n**inconclusive** < **unsafe** < **broken**.",
		"`--require stuck` passes safe, damaged, rescued, and stuck ones",
		"`--require safe`\npasses only safe cells, `--require rescued` safe, damaged and rescued ones — `n/a`",
	} {
		if p := ListsOutOfOrder(drifted, order); len(p) != 1 {
			t.Errorf("%q: %v, want one problem", drifted, p)
		}
	}
	for _, fine := range []string{
		"in the order " + checker.OrderLine() + ".",
		"**safe** < **damaged** < **starved** < **rescued** < **stuck** <\n**inconclusive** < **unsafe** < **broken** (worst)",
		"worst first: `broken`, `unsafe`, `inconclusive`, `stuck`, `rescued`, `starved`, `damaged`, `safe`.",
		"at 1, damaged, safe, damaged, then rescued; at 2, unsafe, unsafe, safe",
		"a run that is both (rescued and damaged, stuck and damaged) gets the worse word",
		"every other column `safe`, `damaged` or `rescued`; varies between safe and rescued, and damaged",
		"```\nsafe, stuck, unsafe\n```\n",
	} {
		if p := ListsOutOfOrder(fine, order); len(p) != 0 {
			t.Errorf("%q: %v, want none", fine, p)
		}
	}
	if p := ListsOutOfOrder("one\ntwo\nsafe, stuck, unsafe.", order); len(p) != 1 || !strings.HasPrefix(p[0], "line 3:") {
		t.Errorf("line number: %v", p)
	}
}
