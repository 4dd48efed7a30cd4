package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MatrixFile is the page `lockcheck matrix` writes into each matrix folder.
const MatrixFile = "matrix.html"

// RunEntry is one run folder as the browser lists it.
type RunEntry struct {
	Path     string // folder, relative to the results root, with forward slashes
	Scenario string
	Lock     string
	Faults   string // the nemesis's fault kinds, from scenario.yaml
	When     time.Time
	Holds    bool // mutual exclusion held
	Matches  bool // the verdict matched the scenario's expect block
	Summary  string
	Report   bool // report.html exists
}

// Class is the verdict's colour: a mismatch with the expected verdict first, then safety.
func (e RunEntry) Class() string {
	switch {
	case !e.Matches:
		return "mismatch"
	case !e.Holds:
		return "unsafe"
	}
	return "safe"
}

// Link is where the entry's name points: its report, or the folder when it has none.
func (e RunEntry) Link() string {
	if e.Report {
		return e.Path + "/" + ReportFile
	}
	return e.Path + "/"
}

// MatrixEntry is one folder holding a matrix.html.
type MatrixEntry struct {
	Path string
	When time.Time
}

// Scan walks root for run folders (those holding verdict.json) and matrix folders, newest first.
func Scan(root string) ([]RunEntry, []MatrixEntry, error) {
	var runs []RunEntry
	var matrices []MatrixEntry
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // an unreadable corner does not hide the rest
		}
		if d.IsDir() || (d.Name() != verdictFile && d.Name() != MatrixFile) {
			return nil
		}
		dir := filepath.Dir(path)
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, _ := d.Info()
		when := folderTime(dir, info)
		if d.Name() == MatrixFile {
			matrices = append(matrices, MatrixEntry{Path: rel, When: when})
			return nil
		}
		runs = append(runs, runEntry(dir, rel, when))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].When.After(runs[j].When) })
	sort.SliceStable(matrices, func(i, j int) bool { return matrices[i].When.After(matrices[j].When) })
	return runs, matrices, nil
}

// folderTime reads the time from a folder named by its stamp (20261121T223234.742), or else
// takes the file's modification time.
func folderTime(dir string, info fs.FileInfo) time.Time {
	if t, err := time.ParseInLocation("20060102T150405.000", filepath.Base(dir), time.Local); err == nil {
		return t
	}
	if t, err := time.ParseInLocation("20060102T150405", filepath.Base(dir), time.Local); err == nil {
		return t
	}
	if info != nil {
		return info.ModTime()
	}
	return time.Time{}
}

// runEntry reads what the list shows. A damaged verdict.json or scenario.yaml leaves blanks
// rather than dropping the run: the list is how one finds broken runs too.
func runEntry(dir, rel string, when time.Time) RunEntry {
	e := RunEntry{Path: rel, When: when}
	var j Judged
	if raw, err := os.ReadFile(filepath.Join(dir, verdictFile)); err == nil && json.Unmarshal(raw, &j) == nil {
		e.Scenario, e.Holds, e.Matches, e.Summary = j.Scenario, j.Verdict.MutualExclusion.Holds, j.Matches, j.Verdict.Summary
	} else {
		e.Summary = "verdict.json unreadable"
	}
	// The scenario is read loosely, not validated: an old run's file stays listable when the
	// loader's rules change.
	var sc struct {
		Name    string `yaml:"name"`
		Lock    string `yaml:"lock"`
		Nemesis []struct {
			Fault  string `yaml:"fault"`
			Random *struct {
				Faults []string `yaml:"faults"`
			} `yaml:"random"`
		} `yaml:"nemesis"`
	}
	if raw, err := os.ReadFile(filepath.Join(dir, scenarioFile)); err == nil && yaml.Unmarshal(raw, &sc) == nil {
		if e.Scenario == "" {
			e.Scenario = sc.Name
		}
		e.Lock = sc.Lock
		seen := map[string]bool{}
		var kinds []string
		add := func(k string) {
			if k != "" && !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
		for _, f := range sc.Nemesis {
			add(f.Fault)
			if f.Random != nil {
				for _, k := range f.Random.Faults {
					add("random " + k)
				}
			}
		}
		e.Faults = strings.Join(kinds, ", ")
	}
	if _, err := os.Stat(filepath.Join(dir, ReportFile)); err == nil {
		e.Report = true
	}
	return e
}

//go:embed assets/index.html.tmpl
var indexText string

var index = template.Must(template.New("index").Parse(indexText))

// Browse serves a results folder: at / the runs (newest first) and matrices, and below it the
// folder's files, read-only and confined to the folder.
func Browse(root string) (http.Handler, error) {
	dir, err := os.OpenRoot(root) // refuses paths (and symlinks) that lead outside root
	if err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	files := http.FileServerFS(dir.FS())
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/" {
			files.ServeHTTP(w, r)
			return
		}
		runs, matrices, err := Scan(root)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		abs, _ := filepath.Abs(root)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := index.Execute(w, map[string]any{"Root": abs, "Runs": runs, "Matrices": matrices, "CSS": template.CSS(indexCSS)}); err != nil {
			return // the client went away
		}
	})
	return mux, nil
}

const indexCSS = `
body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; color: #1d2430; background: #f5f6f8; }
header { background: #fff; border-bottom: 1px solid #e3e6ec; padding: 16px 28px; }
h1 { margin: 0; font-size: 22px; } h2 { font-size: 16px; }
.muted { color: #5b6474; }
main { padding: 8px 28px 28px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #e3e6ec; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eceef2; vertical-align: top; }
th { color: #5b6474; font-weight: 600; font-size: 13px; }
td.summary { font-size: 12.5px; color: #5b6474; }
td.nowrap { white-space: nowrap; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 6px; }
tr.safe .dot { background: #2e7d32; } tr.unsafe .dot { background: #c62828; } tr.mismatch .dot { background: #e0a000; }
tr.mismatch td.verdict { color: #9a6b00; font-weight: 600; }
`
