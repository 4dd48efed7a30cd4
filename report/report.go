// Package report turns a run folder into report.html: the verdict in words, an ownership
// timeline (who believed they held the lock when, where the faults were, which accesses fencing
// rejected), latency and throughput plots, and links to porcupine's views. The page is one
// self-contained file — styles, script and drawings inline — so it opens offline from a CI
// artifact. It reads only the folder (history.jsonl, verdict.json, scenario.yaml).
//
// Browse serves a results folder: a list of runs and matrices, and their files.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
)

var (
	//go:embed assets/report.html.tmpl
	pageText string
	//go:embed assets/report.css
	pageCSS string
	//go:embed assets/report.js
	pageJS string

	page = template.Must(template.New("report").Parse(pageText))
)

// Write builds <dir>/report.html from the run folder dir.
func Write(dir string) error {
	r, err := load(dir)
	if err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	data, err := pageData(r)
	if err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, data); err != nil {
		return fmt.Errorf("report %s: %w", dir, err)
	}
	// Write then rename, so a browser (or serve) never sees half a page.
	path := filepath.Join(dir, ReportFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return os.Rename(tmp, path)
}

type registerRow struct {
	Name, Class, Linearizable, Lost, Final, Link        string
	Applicable                                          bool
	Acked, ReadsRejected, WritesRejected, WritesUnknown int
}

type faultKind struct{ Kind, Color string }

type pageFields struct {
	Name, Stamp, Lock, Nodes, TTL, Duration, Claims, Description string
	Clients                                                      int
	Headline                                                     headline
	Sentences                                                    []string
	Matches                                                      bool
	Mismatches                                                   []checker.Mismatch
	FaultKinds                                                   []faultKind
	Timeline, Latency, Throughput                                template.HTML
	Registers                                                    []registerRow
	Files                                                        []string
	ScenarioText                                                 string
	CSS                                                          template.CSS
	JS                                                           template.JS
}

func pageData(r *run) (*pageFields, error) {
	sc, v := r.scenario, r.judged.Verdict
	latency, err := latencyPlot(r)
	if err != nil {
		return nil, err
	}
	throughput, err := throughputPlot(r, countOps(r))
	if err != nil {
		return nil, err
	}
	nodes := fmt.Sprintf("%d %s node", sc.Nodes, sc.Service())
	if sc.Nodes != 1 {
		nodes += "s"
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, scenarioFile))
	d := &pageFields{
		Name:         sc.Name,
		Stamp:        filepath.Base(r.dir),
		Lock:         sc.Lock,
		Nodes:        nodes,
		TTL:          ttlText(sc.TTL.D()),
		Duration:     sc.Duration.D().String(),
		Claims:       strings.Join(sc.Claims, ", "),
		Description:  sc.Description,
		Clients:      len(r.clients),
		Headline:     verdictHeadline(v),
		Sentences:    checker.Sentences(v),
		Matches:      r.judged.Matches,
		Mismatches:   r.judged.Mismatches,
		Timeline:     template.HTML(timelineSVG(r)),
		Latency:      template.HTML(latency),
		Throughput:   template.HTML(throughput),
		ScenarioText: string(text),
		CSS:          template.CSS(pageCSS),
		JS:           template.JS(pageJS),
	}
	seen := map[string]bool{}
	for _, f := range r.faults {
		if !seen[f.Kind] {
			seen[f.Kind] = true
			d.FaultKinds = append(d.FaultKinds, faultKind{f.Kind, faultColor(f.Kind)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.Registers)) {
		d.Registers = append(d.Registers, newRegisterRow(r, name, v.Registers[name]))
	}
	for _, f := range []string{historyFile, verdictFile, scenarioFile, "logs/", "servers/"} {
		if _, err := os.Stat(filepath.Join(r.dir, f)); err == nil {
			d.Files = append(d.Files, f)
		}
	}
	return d, nil
}

func newRegisterRow(r *run, name string, rv checker.RegisterVerdict) registerRow {
	row := registerRow{Name: name, Applicable: rv.Applicable, Linearizable: rv.Linearizable, Lost: "?", Final: "-",
		Acked: rv.AckedIncrements, ReadsRejected: rv.ReadsRejected, WritesRejected: rv.WritesRejected, WritesUnknown: rv.WritesUnknown}
	if rv.LostUpdatesKnown {
		row.Lost = fmt.Sprint(rv.LostUpdates)
	}
	if rv.Final != nil {
		row.Final = fmt.Sprint(*rv.Final)
	}
	if rv.Linearizable == checker.No || (rv.LostUpdatesKnown && rv.LostUpdates > 0) {
		row.Class = "bad"
	}
	link := "linearizability-" + name + ".html"
	if _, err := os.Stat(filepath.Join(r.dir, link)); err == nil {
		row.Link = link
	}
	return row
}

func ttlText(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
