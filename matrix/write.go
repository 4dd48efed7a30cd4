package matrix

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/internal/rundir"
)

// Files a matrix folder holds.
const (
	MarkdownFile = "matrix.md"
	JSONFile     = "matrix.json"
	HTMLFile     = "matrix.html"
	// JUnitFile is a copy of the JUnit report (lockcheck matrix --junit), kept in the folder so
	// that lockcheck merge finds every shard's.
	JUnitFile = "junit.xml"
)

// WriteFolder writes the matrix as Markdown, JSON and HTML into root/matrix/<stamp>/ (a fresh
// folder even if another matrix started in the same millisecond) and points root/matrix/latest
// at it. It returns the folder.
func WriteFolder(root string, m *Matrix) (string, error) {
	dir, err := rundir.New(filepath.Join(root, "matrix"), m.Started)
	if err != nil {
		return "", fmt.Errorf("create matrix folder: %w", err)
	}
	var md strings.Builder
	m.Markdown(&md, dir)
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	var page strings.Builder
	if err := m.HTML(&page, dir); err != nil {
		return "", err
	}
	for name, body := range map[string][]byte{MarkdownFile: []byte(md.String()), JSONFile: append(js, '\n'), HTMLFile: []byte(page.String())} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	// latest is a convenience; the folder is complete without it.
	_ = rundir.Link(filepath.Join(root, "matrix", "latest"), filepath.Base(dir))
	return dir, nil
}

// Scope says which part of the grid m holds, for the page headers: "" for a whole grid run at
// once; a shard; or a merge and any missing shards.
func (m *Matrix) Scope() string {
	switch {
	case m.Shard != nil:
		return fmt.Sprintf("shard %s: %d of the grid's %d cells; the other shards hold the rest (lockcheck merge puts them together)",
			m.Shard, m.shardCells(), len(m.Locks)*len(m.Faults))
	case len(m.MissingShards) > 0:
		return fmt.Sprintf("merged from %d shard(s); INCOMPLETE: shard(s) %s missing, their cells are absent",
			m.Merged, strings.Join(m.MissingShards, ", "))
	case m.Merged > 0:
		return fmt.Sprintf("merged from %d shards", m.Merged)
	}
	return ""
}

// shardCells counts the grid's cells in m's shard.
func (m *Matrix) shardCells() int {
	n := 0
	for _, l := range m.Locks {
		for _, f := range m.Faults {
			if m.Shard.Has(CellKey(l, f)) {
				n++
			}
		}
	}
	return n
}

// Markdown writes the grid as a table (locks down, faults across) followed by one line per
// non-trivial cell with its detail and run folder (relative to base when possible).
func (m *Matrix) Markdown(w io.Writer, base string) {
	fmt.Fprintf(w, "# lockcheck matrix\n\n%d lock(s) × %d fault(s), started %s, took %s",
		len(m.Locks), len(m.Faults), m.Started.Format(time.RFC3339), m.Wall.Round(time.Second))
	if m.Auto {
		fmt.Fprintf(w, ", up to %d runs side by side (--parallel auto)", m.Peak)
	}
	if m.ServicesReused > 0 {
		fmt.Fprintf(w, ", %d run(s) on a lock service kept warm (%d kept)", m.ServicesReused, m.ServicesKept)
	}
	if m.Interrupted {
		fmt.Fprint(w, " — INTERRUPTED, some cells were not run")
	}
	if sc := m.Scope(); sc != "" {
		fmt.Fprint(w, "; "+sc)
	}
	fmt.Fprint(w, ".\n\n")
	fmt.Fprintf(w, "| lock | %s |\n|---|%s\n", strings.Join(m.Faults, " | "), strings.Repeat("---|", len(m.Faults)))
	for _, lock := range m.Locks {
		row := []string{lock}
		for _, f := range m.Faults {
			c, ok := m.Cell(lock, f)
			label := "—"
			if ok {
				label = c.Label()
			}
			row = append(row, label)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprint(w, "\n## Columns\n\n")
	for _, name := range m.Faults {
		f, _ := faultNamed(name)
		claims := ""
		if len(f.Claims) > 0 {
			claims = " (" + strings.Join(f.Claims, ", ") + ")"
		}
		fmt.Fprintf(w, "- **%s**%s: %s\n", f.Name, claims, f.Summary)
	}
	if m.Baseline != "" {
		fmt.Fprintf(w, "\n## Against the baseline\n\n%s: ", m.Baseline)
		if len(m.Regressions) == 0 {
			fmt.Fprint(w, "no cell got worse.\n")
		} else {
			fmt.Fprintf(w, "%d cell(s) got worse.\n\n", len(m.Regressions))
			for _, r := range m.Regressions {
				against := ""
				if r.Baseline != r.Lock {
					against = " (against " + r.Baseline + ")"
				}
				fmt.Fprintf(w, "- %s × %s%s: %s\n", r.Lock, r.Fault, against, strings.Join(r.How, "; "))
			}
		}
	}
	fmt.Fprint(w, "\n## Cells\n\n")
	for _, c := range m.Cells {
		folder := ""
		if len(c.Outcomes) > 0 && c.Outcomes[0].Dir != "" {
			folder = " — `" + rel(base, c.Outcomes[0].Dir) + "`"
		}
		varies := ""
		if c.Recorded.Varies() && c.Recorded.Why != "" {
			varies = " — varies: " + c.Recorded.Why
		}
		fmt.Fprintf(w, "- %s × %s: **%s** — %s%s%s\n", c.Lock, c.Fault, c.Label(), c.Detail, folder, varies)
	}
	fmt.Fprint(w, "\nStatuses, best first: "+legend(" = ", "; ")+"; n/a = the fault does not apply. "+legendNotes+
		" `--require S` passes S and every better status. Reproduce a cell: `lockcheck matrix --locks LOCK --faults FAULT`.\n")
}

// legend says each outcome, best first, in the checker's words (checker.Meaning), so the page's
// legend keeps checker.Outcomes' order and cannot drift from it.
func legend(is, sep string) string {
	var parts []string
	for _, o := range checker.BestFirst() {
		parts = append(parts, string(o)+is+checker.Meaning(o))
	}
	return strings.Join(parts, sep)
}

// legendNotes explain what a cell's label adds to its status.
const legendNotes = "A rescued cell names the fencing registers that kept the data; outlived: the double ownership was " +
	"a holder outliving its promise (K2), explained: a fault on the servers explains it. A cell of several runs shows its " +
	"worst status and how many runs reached it; \"varies\" gives the rates its record measured, by which a gate judges it."

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}

var page = template.Must(template.New("matrix").Funcs(template.FuncMap{
	"cell": func(m *Matrix, lock, fault string) *Cell {
		if c, ok := m.Cell(lock, fault); ok {
			return &c
		}
		return nil
	},
	"link": func(base string, c *Cell) string {
		if c == nil || len(c.Outcomes) == 0 || c.Outcomes[0].Dir == "" {
			return ""
		}
		return filepath.ToSlash(rel(base, c.Outcomes[0].Dir)) + "/report.html"
	},
	"summary": func(name string) string { f, _ := faultNamed(name); return f.Summary },
	"legend":  func() string { return legend(": ", " · ") },
	"notes":   func() string { return legendNotes },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lockcheck matrix</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:6px 8px;vertical-align:top}
th{background:#f4f4f4;font-weight:600}td.lock{font-weight:600;white-space:nowrap}
.safe{background:#d9f2dd}.damaged{background:#e6f0c0}.starved{background:#f5e6c8}.rescued{background:#fff2c2}.unsafe{background:#f8d0cc}.broken{background:#b22222;color:#fff}.stuck{background:#e4d7f5}
.na{background:#eee;color:#888}.error{background:#888;color:#fff}
td small{display:block;color:#444;max-width:18em}a{color:inherit}
</style></head><body>
<h1>lockcheck matrix</h1>
<p>{{len .M.Locks}} lock(s) × {{len .M.Faults}} fault(s), started {{.M.Started.Format "2006-01-02 15:04:05"}}, took {{.M.Wall}}
{{- if .M.Interrupted}} — <b>interrupted</b>{{end}}{{with .M.Scope}}; {{.}}{{end}}.</p>
<table><tr><th>lock</th>{{range .M.Faults}}<th title="{{summary .}}">{{.}}</th>{{end}}</tr>
{{range $lock := .M.Locks}}<tr><td class="lock">{{$lock}}</td>
{{- range $f := $.M.Faults}}{{with cell $.M $lock $f}}<td class="{{if eq .Status "n/a"}}na{{else}}{{.Status}}{{end}}">
{{- with link $.Base .}}<a href="{{.}}">{{end}}{{.Label}}{{if link $.Base .}}</a>{{end}}<small>{{.Detail}}</small>
{{- with .Recorded}}{{if and .Varies .Why}}<small><i>varies: {{.Why}}</i></small>{{end}}{{end}}</td>
{{- else}}<td>—</td>{{end}}{{end}}</tr>
{{end}}</table>
{{with .M.Baseline}}<h2>Against the baseline</h2><p>{{.}}: {{if $.M.Regressions}}{{len $.M.Regressions}} cell(s) got worse.</p><ul>{{range $.M.Regressions}}<li><b>{{.Lock}} × {{.Fault}}</b>{{if ne .Baseline .Lock}} (against {{.Baseline}}){{end}}: {{range $i, $h := .How}}{{if $i}}; {{end}}{{$h}}{{end}}</li>{{end}}</ul>{{else}}no cell got worse.</p>{{end}}{{end}}
<p>Best first — {{legend}} · n/a: the fault does not apply. {{notes}}</p>
</body></html>
`))

// HTML writes a self-contained page of the grid; cells link to their runs' report pages.
func (m *Matrix) HTML(w io.Writer, base string) error {
	return page.Execute(w, struct {
		M    *Matrix
		Base string
	}{m, base})
}
