// Package doclinks checks the relative links of Markdown documents: every linked file exists,
// and every #anchor names a heading of its target as GitHub renders it. The repository's own
// check (README.md and docs/*.md) is this package's test.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// link is a Markdown link or image, [text](target) or ![alt](target); angle brackets and a title
// are allowed around and after the target.
var link = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)

// Anchor is the anchor GitHub gives a heading: lower case, inline markup and punctuation dropped
// (letters, digits, '-', '_' and spaces are kept), spaces turned into '-'.
func Anchor(heading string) string {
	heading = linkTarget.ReplaceAllString(heading, "]") // a link's target is not text
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors lists the anchors of a Markdown text's headings (outside fenced code), repeated
// headings numbered as GitHub numbers them (x, x-1, x-2), and any <a name="..."> or id="...".
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range lines(text, false) {
		if m := headingLine.FindStringSubmatch(line); m != nil {
			a := Anchor(m[1])
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// lines is text's lines, one for each (so that indexes are line numbers), with fenced code
// blocks blanked and, when dropCode, inline code removed.
func lines(text string, dropCode bool) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			fenced = !fenced
			out = append(out, "")
		case fenced:
			out = append(out, "")
		case dropCode:
			out = append(out, inlineCode.ReplaceAllString(line, ""))
		default:
			out = append(out, line)
		}
	}
	return out
}

var (
	inlineCode  = regexp.MustCompile("`[^`]*`")
	linkTarget  = regexp.MustCompile(`\]\([^)]*\)`)
	headingLine = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Check returns a problem for every relative link of the Markdown file at path that leads to a
// file that does not exist, or to an anchor its target (a Markdown file) does not have. Links to
// other sites (http:, https:, mailto:) are not followed.
func Check(path string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, line := range lines(string(src), true) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			where := fmt.Sprintf("%s:%d: %s", path, i+1, target)
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					problems = append(problems, where+": no such file")
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				problems = append(problems, where+": an anchor into a file that is not Markdown")
				continue
			}
			text, err := os.ReadFile(dest)
			if err != nil {
				problems = append(problems, where+": "+err.Error())
				continue
			}
			if !Anchors(string(text))[anchor] {
				problems = append(problems, fmt.Sprintf("%s: %s has no heading with anchor #%s", where, dest, anchor))
			}
		}
	}
	return problems, nil
}
