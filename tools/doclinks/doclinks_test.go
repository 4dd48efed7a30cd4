package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
