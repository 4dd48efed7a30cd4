package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// screenWidth is what a listing fits in by default: 100 columns.
const screenWidth = 100

// table is rows of cells under a header, printed with two spaces between columns. The last
// column takes what is left of the width: cut short with "…", or wrapped onto lines of its own
// under it (width 0: no limit).
type table struct {
	header []string
	rows   [][]string
	wrap   bool
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, width int) error {
	n := len(t.header)
	widths := make([]int, n)
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i := 0; i < n-1 && i < len(r); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	used := 0
	for _, wd := range widths[:n-1] {
		used += wd + 2
	}
	last := 0 // no limit
	if width > 0 {
		last = max(width-used, 12)
	}
	for _, r := range append([][]string{t.header}, t.rows...) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			if i == n-1 {
				switch {
				case last > 0 && t.wrap:
					cell = strings.ReplaceAll(wrap(cell, last, ""), "\n", "\n"+strings.Repeat(" ", used))
				case last > 0:
					cell = cut(cell, last)
				}
				b.WriteString(cell)
				break
			}
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// cut shortens s to at most n runes, ending in "…" when it was cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ,;:") + "…"
}

// wrap breaks text into lines of at most width runes at spaces (a longer word stays whole), each
// after the first starting with indent (counted in the width). Leading spaces of text are kept.
func wrap(text string, width int, indent string) string {
	var lines []string
	lead := text[:len(text)-len(strings.TrimLeft(text, " "))]
	line, n := lead, utf8.RuneCountInString(lead)
	for i, word := range strings.Fields(text) {
		if i == 0 {
			line, n = line+word, n+utf8.RuneCountInString(word)
			continue
		}
		wn := utf8.RuneCountInString(word)
		switch {
		case n+1+wn > width:
			lines = append(lines, line)
			line, n = indent+word, utf8.RuneCountInString(indent)+wn
		default:
			line, n = line+" "+word, n+1+wn
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
