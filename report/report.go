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
	"github.com/lockcheck/lockcheck/scenarios"
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
	return write(r)
}

// WriteFrom builds <dir>/report.html from a history already read and judged (the runner's Judge:
// a soak run's history is not read twice). sc is nil for a folder with only a history.
func WriteFrom(dir string, sc *scenarios.Scenario, l *checker.Log, j Judged) error {
	return write(newRun(dir, sc, l, j))
}

func write(r *run) error {
	dir := r.dir
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
	NotApplicable                                       string // what the lock lacked, when not Applicable
	Applicable                                          bool
	Acked, ReadsRejected, WritesRejected, WritesUnknown int
	LegitRejected, UncertainRejected                    int
}

type faultKind struct{ Kind, Color string }

type pageFields struct {
	Name, Stamp, Lock, Nodes, TTL, Duration, Claims, Description string
	HasScenario                                                  bool
	Clients                                                      int
	// A long run: an overview drawn by the page's script from OverviewData, and detail windows.
	Long                          bool
	OverviewData                  template.JS
	Windows                       []windowView
	Undrawn                       []windowView // windows over the page's budget: listed, not drawn
	UndrawnMore                   int
	Inconclusive                  string
	Unexercised                   string // why the run's faults did not put the lock to the test
	Headline                      headline
	Sentences                     []string
	Matches                       bool
	Mismatches                    []checker.Mismatch
	FaultKinds                    []faultKind
	Classed                       bool // the windows of double ownership have classes (promises recorded)
	Timeline, Latency, Throughput template.HTML
	Registers                     []registerRow
	Fairness                      []fairnessRow // fairness.go
	FairnessTotal                 string
	Promised                      bool            // the design promises first come, first served
	Collateral                    []collateralRow // collateral.go
	CollateralTotal               string
	Files                         []string
	ScenarioText                  string
	CSS                           template.CSS
	JS                            template.JS
}

// windowView is one detail window of a long run.
type windowView struct {
	ID, From, To string
	Why          []string
	SVG          template.HTML
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
	text, _ := os.ReadFile(filepath.Join(r.dir, scenarioFile))
	d := &pageFields{
		Stamp:        filepath.Base(r.dir),
		Clients:      len(r.clients),
		Headline:     verdictHeadline(v),
		Sentences:    checker.Sentences(v),
		Matches:      r.judged.Matches,
		Mismatches:   r.judged.Mismatches,
		Inconclusive: v.Inconclusive,
		Unexercised:  v.Unexercised,
		Latency:      template.HTML(latency),
		Throughput:   template.HTML(throughput),
		ScenarioText: string(text),
		CSS:          template.CSS(pageCSS),
		JS:           template.JS(pageJS),
		Long:         r.long,
		Duration:     time.Duration(r.end - r.start).Round(time.Millisecond).String(),
	}
	if sc != nil {
		nodes := fmt.Sprintf("%d %s node", sc.Nodes, sc.Service())
		if sc.Nodes != 1 {
			nodes += "s"
		}
		if v.Server != "" {
			nodes += ": " + v.Server
		}
		d.HasScenario, d.Name, d.Lock, d.Nodes = true, sc.Name, sc.LockDescription(), nodes
		d.TTL, d.Duration = ttlText(sc.TTL.D()), sc.Duration.D().String()
		d.Claims, d.Description = strings.Join(sc.Claims, ", "), sc.Description
	} else {
		d.Name = "history " + filepath.Base(r.dir)
	}
	if !r.long {
		d.Timeline = template.HTML(timelineSVG(r, view{r.start, r.end}, "timeline"))
	} else {
		data, err := overviewJSON(r)
		if err != nil {
			return nil, err
		}
		d.OverviewData = template.JS(data)
		for _, w := range r.windows {
			wv := windowView{ID: w.id, From: r.offset(w.from), To: r.offset(w.to), Why: w.why}
			switch {
			case w.drawn:
				wv.SVG = template.HTML(timelineSVG(r, view{w.from, w.to}, w.id))
				d.Windows = append(d.Windows, wv)
			case len(d.Undrawn) < maxListed:
				d.Undrawn = append(d.Undrawn, wv)
			default:
				d.UndrawnMore++
			}
		}
	}
	d.Fairness, d.FairnessTotal, d.Promised = fairnessRows(v), fairnessTotal(v), v.Fairness.Promised
	d.Classed = v.MutualExclusion.Worst() != ""
	d.Collateral, d.CollateralTotal = collateralRows(v.Collateral), collateralTotal(v.Collateral)
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
		Acked: rv.AckedIncrements, ReadsRejected: rv.ReadsRejected, WritesRejected: rv.WritesRejected, WritesUnknown: rv.WritesUnknown,
		LegitRejected: rv.LegitRejected, UncertainRejected: rv.UncertainRejected}
	if !rv.Applicable {
		row.NotApplicable = checker.NotApplicableWhy(name)
	}
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
