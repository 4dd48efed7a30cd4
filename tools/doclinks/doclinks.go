// Package doclinks checks the relative links of Markdown documents: every linked file exists,
// and every #anchor names a heading of its target as GitHub renders it; and that no list of a
// fixed vocabulary (the outcomes) written out by hand has drifted from the code's. The
// repository's own check (README.md and docs/*.md) is this package's test.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// Lists of words a text writes out by hand drift from the code's list (an outcome added in code
// and not in every page's list): ListsOutOfOrder finds them.
var (
	// listSep splits text into items at list separators, "<" and "," (", and", ", or" too); "and"
	// or "or" alone joins alternatives a sentence names ("safe, damaged or rescued"), not a list.
	listSep = regexp.MustCompile(`\s*(?:<|,)(?:\s*(?:and|or)\b)?\s*`)
	// listBreak ends a list: a sentence's or a clause's end, a parenthesis, a table cell, a
	// paragraph break.
	listBreak = regexp.MustCompile(`[.;:()|—\[\]]|\n\s*\n`)
	markup    = strings.NewReplacer("*", "", "`", "")
)

// ListsOutOfOrder returns a problem for every list in a Markdown text (outside fenced code, a
// list may run across lines) of three or more distinct words of order, joined by "<" or ",", that
// is not all of order, in order or reversed: a subset or another order is a
// list written by hand that has drifted. An item counts when its first word is one of order's
// ("rescued by which register"), the list's first item also by its last ("the order safe"); a
// list that repeats a word is a sequence of observations, not the order, and is left alone.
func ListsOutOfOrder(text string, order []string) []string {
	known := map[string]bool{}
	for _, w := range order {
		known[w] = true
	}
	reversed := slices.Clone(order)
	slices.Reverse(reversed)
	text = strings.Join(lines(text, false), "\n")
	var problems []string
	offset := 0
	for _, part := range splitKeep(listBreak, text) {
		var run []string
		first := -1
		flush := func() {
			if len(run) >= 3 && !repeats(run) && !slices.Equal(run, order) && !slices.Equal(run, reversed) {
				problems = append(problems, fmt.Sprintf("line %d: %q is not %q", 1+strings.Count(text[:first], "\n"),
					strings.Join(run, ", "), strings.Join(order, ", ")))
			}
			run, first = nil, -1
		}
		at := 0
		for _, item := range listSep.Split(part, -1) {
			start := offset + strings.Index(part[at:], item) + at
			at = start - offset + len(item)
			fields := strings.Fields(markup.Replace(item))
			word := func(i int) string { return strings.ToLower(strings.TrimRight(fields[i], ".;:()|—[]")) }
			switch {
			case len(fields) > 0 && known[word(0)]:
				// An item goes on a list with its first word: "rescued by which register".
				if first < 0 {
					first = start + len(item) - len(strings.TrimLeft(item, " \t\n"))
				}
				run = append(run, word(0))
				if len(fields) > 2 && fields[1] == "and" && known[word(2)] { // a list's last: "damaged and rescued"
					run = append(run, word(2))
				}
			case len(fields) > 0 && known[word(len(fields)-1)]:
				// Or a list starts with an item's last word: "the order safe < damaged".
				flush()
				first = start + strings.LastIndex(item, fields[len(fields)-1])
				run = []string{word(len(fields) - 1)}
			default:
				flush()
			}
		}
		flush()
		offset += len(part)
	}
	return problems
}

// splitKeep splits s at every match of re, keeping the parts' lengths summing to len(s) (each
// match ends the part before it), so that offsets into the parts are offsets into s.
func splitKeep(re *regexp.Regexp, s string) []string {
	var parts []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		parts = append(parts, s[last:m[1]])
		last = m[1]
	}
	return append(parts, s[last:])
}

func repeats(words []string) bool {
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] {
			return true
		}
		seen[w] = true
	}
	return false
}
