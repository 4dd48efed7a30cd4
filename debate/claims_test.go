package debate

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the generated scenario index in docs/CLAIMS.md")

const (
	repoRoot   = ".."
	claimsPath = "../docs/CLAIMS.md"
	indexBegin = "<!-- claims index: begin -->"
	indexEnd   = "<!-- claims index: end -->"
	notTested  = "**Not tested:**"
)

// definedClaim is one entry of docs/CLAIMS.md: a "### K2" heading and the text up to the next
// heading.
type definedClaim struct {
	ID        string
	Line      int
	NotTested bool
}

var claimHeading = regexp.MustCompile(`^### ([KAMP][0-9]+)$`)

func readClaims(t *testing.T) (text string, claims []definedClaim) {
	t.Helper()
	b, err := os.ReadFile(claimsPath)
	if err != nil {
		t.Fatal(err)
	}
	var cur *definedClaim
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			cur = nil
			if m := claimHeading.FindStringSubmatch(line); m != nil {
				claims = append(claims, definedClaim{ID: m[1], Line: i + 1})
				cur = &claims[len(claims)-1]
			}
			continue
		}
		if cur != nil && strings.HasPrefix(line, notTested) {
			cur.NotTested = true
		}
	}
	if len(claims) == 0 {
		t.Fatalf("%s defines no claim (no \"### K1\"-style heading)", claimsPath)
	}
	return string(b), claims
}

// scenarioFile is the part of a scenario file this test needs.
type scenarioFile struct {
	Path       string // relative to the repository root
	Display    string // as README and `lockcheck list -v` name it: debate/k2-set-nx-px
	Name       string
	Claims     []string
	ClaimsLine int
}

// readScenarios reads name and claims of every scenario file with a YAML parser of its own, so
// it does not depend on the scenario loader.
func readScenarios(t *testing.T) []scenarioFile {
	t.Helper()
	var out []scenarioFile
	for _, dir := range []string{"scenarios", "scenarios/debate"} {
		files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			rel, _ := filepath.Rel(repoRoot, f)
			sc := scenarioFile{Path: filepath.ToSlash(rel)}
			if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
				t.Fatalf("%s: not a mapping", sc.Path)
			}
			top := doc.Content[0].Content
			for i := 0; i+1 < len(top); i += 2 {
				switch top[i].Value {
				case "name":
					sc.Name = top[i+1].Value
				case "claims":
					sc.ClaimsLine = top[i].Line
					if err := top[i+1].Decode(&sc.Claims); err != nil {
						t.Fatalf("%s:%d: claims: %v", sc.Path, top[i].Line, err)
					}
				}
			}
			sc.Display = strings.TrimSuffix(strings.TrimPrefix(sc.Path, "scenarios/"), ".yaml")
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		t.Fatal("no scenario files found")
	}
	return out
}

func claimIDs(claims []definedClaim) []string {
	ids := make([]string, len(claims))
	for i, c := range claims {
		ids[i] = c.ID
	}
	return ids
}

// Every claim a scenario names is defined in docs/CLAIMS.md, and so is every claim the debate
// report must cover.
func TestClaimsUsedByScenariosAreDefined(t *testing.T) {
	_, claims := readClaims(t)
	defined := map[string]bool{}
	for _, c := range claims {
		if defined[c.ID] {
			t.Errorf("%s:%d: claim %s is defined twice", claimsPath, c.Line, c.ID)
		}
		defined[c.ID] = true
	}
	valid := strings.Join(claimIDs(claims), ", ")
	for _, sc := range readScenarios(t) {
		for _, id := range sc.Claims {
			if !defined[id] {
				t.Errorf("%s:%d: claims: %q is not defined in docs/CLAIMS.md; defined claims: %s", sc.Path, sc.ClaimsLine, id, valid)
			}
		}
	}
	for _, id := range Required {
		if !defined[id] {
			t.Errorf("debate.Required names %s, which docs/CLAIMS.md does not define", id)
		}
	}
}

// Every claim in docs/CLAIMS.md is named by at least one scenario, or its entry says why not
// ("**Not tested:**"); a claim marked so must really have no scenario.
func TestClaimsAreShownOrMarkedNotTested(t *testing.T) {
	_, claims := readClaims(t)
	shown := map[string][]string{}
	for _, sc := range readScenarios(t) {
		for _, id := range sc.Claims {
			shown[id] = append(shown[id], sc.Display)
		}
	}
	for _, c := range claims {
		switch {
		case len(shown[c.ID]) == 0 && !c.NotTested:
			t.Errorf("%s:%d: no scenario names %s; write one, or say why in a %q line", claimsPath, c.Line, c.ID, notTested)
		case len(shown[c.ID]) > 0 && c.NotTested:
			t.Errorf("%s:%d: %s is marked %q but %v name it", claimsPath, c.Line, c.ID, notTested, shown[c.ID])
		}
	}
}

// claimsIndex is the table at the end of docs/CLAIMS.md: each claim and the scenarios that name
// it, debate scenarios first.
func claimsIndex(claims []definedClaim, scs []scenarioFile) string {
	shown := map[string][]string{}
	for _, sc := range scs {
		for _, id := range sc.Claims {
			shown[id] = append(shown[id], sc.Display)
		}
	}
	var b strings.Builder
	b.WriteString("| claim | scenarios |\n|---|---|\n")
	for _, c := range claims {
		names := shown[c.ID]
		sort.Slice(names, func(i, j int) bool {
			di, dj := strings.HasPrefix(names[i], "debate/"), strings.HasPrefix(names[j], "debate/")
			if di != dj {
				return di
			}
			return names[i] < names[j]
		})
		cell := "none (not tested)"
		if len(names) > 0 {
			cell = "`" + strings.Join(names, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", c.ID, strings.ToLower(c.ID), cell)
	}
	return b.String()
}

// The index in docs/CLAIMS.md is what the scenario files say now (-update rewrites it).
func TestClaimsIndexIsCurrent(t *testing.T) {
	text, claims := readClaims(t)
	i, j := strings.Index(text, indexBegin), strings.Index(text, indexEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q ... %q markers around the scenario index", claimsPath, indexBegin, indexEnd)
	}
	want := indexBegin + "\n" + claimsIndex(claims, readScenarios(t))
	got := text[i:j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(claimsPath, []byte(text[:i]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the scenario index in %s", claimsPath)
		return
	}
	t.Errorf("the scenario index in %s is out of date; run `go test ./debate/ -run TestClaimsIndex "+
		"-update`.\nwant:\n%s\ngot:\n%s", claimsPath, want, got)
}

// githubAnchor is the anchor GitHub gives a Markdown heading: lower case, punctuation dropped,
// spaces as hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var claimsLink = regexp.MustCompile(`\]\(([./]*docs/)?CLAIMS\.md(#[^)]*)?\)|\]\((#[^)]*)\)`)

// Every link to docs/CLAIMS.md (from README.md, docs/*.md, the debate report) and every link
// inside it lands on a heading that exists.
func TestClaimLinksResolve(t *testing.T) {
	text, _ := readClaims(t)
	anchors := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "#"))] = true
		}
	}
	check := func(name, md string, internal bool) {
		for _, m := range claimsLink.FindAllStringSubmatch(md, -1) {
			anchor := m[2]
			if m[3] != "" {
				if !internal {
					continue // a link within that other document
				}
				anchor = m[3]
			}
			if anchor != "" && !anchors[strings.TrimPrefix(anchor, "#")] {
				t.Errorf("%s links to CLAIMS.md%s, which has no such heading", name, anchor)
			}
		}
	}
	check(claimsPath, text, true)
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, f := range append(docs, filepath.Join(repoRoot, "README.md")) {
		if f == filepath.Join(repoRoot, "docs", "CLAIMS.md") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, string(b), false)
	}
	var report strings.Builder
	Report{Rows: []Row{{Scenario: "x", Claims: []string{"K2", "A10", "M1"}, Runs: 1, Matched: 1}}}.Markdown(&report)
	check("the debate report", report.String(), false)
	if !strings.Contains(report.String(), "[A10](../docs/CLAIMS.md#a10)") {
		t.Errorf("the debate report does not link claim ids to %s:\n%s", ClaimsDoc, report.String())
	}
	// The report's link is relative to results/DEBATE.md and docs/DEBATE.md.
	for _, dir := range []string{"results", "docs"} {
		if filepath.Clean(filepath.Join(repoRoot, dir, ClaimsDoc)) != filepath.Clean(claimsPath) {
			t.Errorf("ClaimsDoc %s does not reach docs/CLAIMS.md from %s/", ClaimsDoc, dir)
		}
	}
}

var debateRow = regexp.MustCompile(`^\| (.*?) \| \[([a-z0-9-]+)\]\(#[a-z0-9-]+\) \|`)

// docs/DEBATE.md is a copy of a `make debate` report, edited by hand when scenarios are renamed:
// its table names the debate scenarios that exist, in the order and with the claims that
// `lockcheck debate` would write now.
func TestDebateDocMatchesTheScenarios(t *testing.T) {
	list, err := Load(Options{Dir: "../scenarios/debate"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, sc := range list {
		want = append(want, sc.Name+": "+claimLinks(sc.Claims, ClaimsDoc))
	}
	f, err := os.Open(filepath.Join(repoRoot, "docs", "DEBATE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if m := debateRow.FindStringSubmatch(s.Text()); m != nil {
			got = append(got, m[2]+": "+m[1])
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/DEBATE.md's table differs from the debate scenarios.\nwant:\n%s\ngot:\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// Documents the repository does not have must not be cited: the project's background notes and
// source articles live outside it, so a citation names the source by what it is (docs/CLAIMS.md
// describes them). The patterns are split so that this file does not match itself.
var missingDocuments = []*regexp.Regexp{
	regexp.MustCompile(`REFERENCE` + `\.md`),
	regexp.MustCompile(`DESIGN` + `\.md`),
	regexp.MustCompile(`shared/` + `seeds`),
	regexp.MustCompile(`(?i)\bseeds? ?` + `00[0-9]\b`), // a source article by its file number
}

// leftovers are citations still in packages being rewritten on another branch; the test fails
// when one is gone, so that this list stays exactly what remains.
var leftovers = map[string]string{}

func TestNoFileCitesADocumentTheRepositoryLacks(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" || d.IsDir() && (rel == "bin" || rel == "results") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git file
		}
		if d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(rel, ".test") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil // binary
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, re := range missingDocuments {
				for _, m := range re.FindAllString(line, -1) {
					if leftovers[rel] == m {
						seen[rel] = true
						continue
					}
					t.Errorf("%s:%d cites %q, which the repository does not have: name the source by what it is (docs/CLAIMS.md)", rel, n+1, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, m := range leftovers {
		if !seen[f] {
			t.Errorf("%s no longer cites %q: remove it from leftovers in debate/claims_test.go", f, m)
		}
	}
}
