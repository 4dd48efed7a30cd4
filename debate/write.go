package debate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/internal/shard"
)

// Record is the stored repeatability measurement (`make debate-repeat`), kept in the repository
// so that a quick `make debate` can show how often each verdict reproduced without re-running
// everything twenty times: one Measurement per condition the debate was measured under.
type Record struct {
	Measurements []Measurement `json:"measurements"`
}

// Measurement is every debate scenario run Count times under one condition: on one provider, with
// the machine quiet (one run at a time) or loaded (Parallel runs side by side, so every run has
// another beside it, as when a CI machine runs a second job).
type Measurement struct {
	Condition string        `json:"condition"` // quiet or loaded
	Parallel  int           `json:"parallel"`
	Provider  string        `json:"provider"`
	Measured  time.Time     `json:"measured"`
	Command   string        `json:"command"`
	Machine   string        `json:"machine"`
	Wall      time.Duration `json:"wall_ns"`
	Rows      []Row         `json:"rows"`
}

// Label names a measurement in a report: "local, quiet".
func (m Measurement) Label() string { return m.Provider + ", " + m.Condition }

// Condition is the name of the condition a debate run with parallel runs side by side measures.
func Condition(parallel int) string {
	if parallel > 1 {
		return "loaded"
	}
	return "quiet"
}

// ReadRecord loads a record; a missing file is no record, not an error. A record written before
// conditions existed (one set of rows) reads as one quiet local measurement.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Measurements) == 0 {
		var old Measurement
		if err := json.Unmarshal(b, &old); err == nil && len(old.Rows) > 0 {
			old.Condition, old.Provider, old.Parallel = "quiet", "local", 1
			r.Measurements = []Measurement{old}
		}
	}
	return &r, nil
}

// WriteRecord stores m in the record at path, replacing an earlier measurement of the same
// provider and condition and keeping the others. With partial (a run of some scenarios only,
// `--only`), m's rows replace only those rows of the earlier measurement, which keeps its others,
// and its command says which rows were measured again, when and how.
func WriteRecord(path string, m Measurement, partial bool) error {
	r, err := ReadRecord(path)
	if err != nil {
		return err
	}
	if r == nil {
		r = &Record{}
	}
	i := slices.IndexFunc(r.Measurements, func(x Measurement) bool { return x.Label() == m.Label() })
	switch {
	case i < 0:
		r.Measurements = append(r.Measurements, m)
	case partial:
		r.Measurements[i] = r.Measurements[i].replaceRows(m)
	default:
		r.Measurements[i] = m
	}
	sort.SliceStable(r.Measurements, func(i, j int) bool { return r.Measurements[i].Label() < r.Measurements[j].Label() })
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// replaceRows is old with again's rows in place of its rows of the same scenarios (appended when
// old had none), its command noting them.
func (old Measurement) replaceRows(again Measurement) Measurement {
	old.Rows = slices.Clone(old.Rows)
	var names []string
	for _, row := range again.Rows {
		names = append(names, row.Scenario)
		if i := slices.IndexFunc(old.Rows, func(x Row) bool { return x.Scenario == row.Scenario }); i >= 0 {
			old.Rows[i] = row
		} else {
			old.Rows = append(old.Rows, row)
		}
	}
	old.Command += fmt.Sprintf("; %s measured again on %s (%s, parallel %d) with: %s",
		strings.Join(names, ", "), again.Measured.UTC().Format("2006-01-02 15:04"), again.Machine, again.Parallel, again.Command)
	return old
}

// row is the measurement's row of the named scenario.
func (m Measurement) row(name string) (Row, bool) {
	for _, x := range m.Rows {
		if x.Scenario == name {
			return x, true
		}
	}
	return Row{}, false
}

// Machine describes this machine for a report: cores and memory.
func Machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores%s, %s/%s", runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

// Required are the claims the debate report must cover; Markdown lists any left uncovered.
var Required = []string{"K2", "K3", "K4", "K6", "K8", "K9", "K10", "A4", "A7", "A8", "A10"}

// Report is what DEBATE.md is made from.
type Report struct {
	Generated time.Time
	Command   string
	Wall      time.Duration
	Rows      []Row
	Record    *Record // repeatability measured earlier, may be nil
	ClaimsDoc string  // link target for claim ids; default ClaimsDoc, right for results/ and docs/
	// Scope says which part of the debate the report holds ("" for all of it); Partial is set
	// when it lacks scenarios (a shard, or a merge with shards missing).
	Scope   string
	Partial bool
}

// ResultKind marks a debate's JSON file, so that lockcheck merge can tell it from other JSON.
const ResultKind = "lockcheck-debate"

// Result is everything a debate run produced, stored as JSON next to its DEBATE.md: enough to
// merge the shards of a debate run by several CI jobs into one report.
type Result struct {
	Kind      string        `json:"kind"`
	Generated time.Time     `json:"generated"`
	Command   string        `json:"command"`
	Wall      time.Duration `json:"wall_ns"`
	Count     int           `json:"count"`
	Seeds     int           `json:"seeds"`
	// Scenarios are the file names of every scenario of the run, every shard's: what a merge
	// must find, and how shards of different runs are told apart.
	Scenarios []string `json:"scenarios"`
	// Shard is set when the run did only part of Scenarios.
	Shard *shard.Shard `json:"shard,omitempty"`
	// Merged is the number of shards a merged result was made from; MissingShards lists those
	// that were not there.
	Merged        int      `json:"merged_shards,omitempty"`
	MissingShards []string `json:"missing_shards,omitempty"`
	Interrupted   bool     `json:"interrupted,omitempty"`
	// ResultsDir and Out are where the run folders and the report were written (as given), so a
	// merge can find the run folders again where the shard's artifacts are unpacked.
	ResultsDir string  `json:"results_dir"`
	Out        string  `json:"out"`
	Rows       []Row   `json:"rows"`
	Record     *Record `json:"repeatability,omitempty"`
}

// JSONPath is where the Result of a report written to out goes: DEBATE.md → DEBATE.json.
func JSONPath(out string) string { return strings.TrimSuffix(out, filepath.Ext(out)) + ".json" }

// JUnitPath is where a copy of the JUnit report (--junit) goes for lockcheck merge to find:
// DEBATE.md → DEBATE.junit.xml.
func JUnitPath(out string) string { return strings.TrimSuffix(out, filepath.Ext(out)) + ".junit.xml" }

// Report is the Markdown report of the result.
func (r Result) Report() Report {
	rep := Report{Generated: r.Generated, Command: r.Command, Wall: r.Wall, Rows: r.Rows, Record: r.Record}
	switch {
	case r.Shard != nil:
		rep.Scope = fmt.Sprintf("This is shard %s: %d of the run's %d scenarios; the other shards hold the rest (`lockcheck merge` puts them together).",
			r.Shard, len(r.Rows), len(r.Scenarios))
		rep.Partial = true
	case len(r.MissingShards) > 0:
		rep.Scope = fmt.Sprintf("Merged from %d shard(s). INCOMPLETE: shard(s) %s missing, their scenarios are absent.",
			r.Merged, strings.Join(r.MissingShards, ", "))
		rep.Partial = true
	case r.Merged > 0:
		rep.Scope = fmt.Sprintf("Merged from %d shards run side by side.", r.Merged)
	}
	if r.Interrupted {
		rep.Scope = strings.TrimSpace(rep.Scope + " INTERRUPTED: some scenarios were not run.")
		rep.Partial = true
	}
	return rep
}

// WriteResult stores r as JSON at path.
func WriteResult(path string, r Result) error {
	r.Kind = ResultKind
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write debate result: %w", err)
	}
	return nil
}

// ReadResult loads a Result; a JSON file of another kind is ErrNotDebate.
func ReadResult(path string) (Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	if r.Kind != ResultKind {
		return Result{}, fmt.Errorf("%s: %w", path, ErrNotDebate)
	}
	return r, nil
}

// ErrNotDebate: a JSON file is not a debate's Result.
var ErrNotDebate = errors.New("not a debate result")

// Markdown writes DEBATE.md.
func (r Report) Markdown(w io.Writer) {
	matched, errs := 0, 0
	for _, x := range r.Rows {
		if x.Runs > 0 && (x.Random && x.Matched == x.Runs || !x.Random && x.Passed()) {
			matched++
		}
		errs += x.Errors
	}
	doc := r.ClaimsDoc
	if doc == "" {
		doc = ClaimsDoc
	}
	fmt.Fprintf(w, "# The Kleppmann/antirez debate, on real servers\n\n")
	fmt.Fprintf(w, "Generated by `%s` on %s (%s), in %s. Every row is a scenario in `scenarios/debate/` run against "+
		"real redis-server / ZooKeeper processes with real faults; each claim id links to its statement in "+
		"[docs/CLAIMS.md](%s) (K = Kleppmann, A = antirez, M = a common mistake from the source articles). "+
		"**%d of %d** scenarios reached the verdict their file expects in every run",
		r.Command, r.Generated.Format("2006-01-02 15:04 MST"), Machine(), r.Wall.Round(time.Second), doc, matched, len(r.Rows))
	if errs > 0 {
		fmt.Fprintf(w, " (%d run(s) failed in the harness)", errs)
	}
	fmt.Fprint(w, ".\n\n")
	if r.Scope != "" {
		fmt.Fprintf(w, "%s\n\n", r.Scope)
	}

	fmt.Fprintln(w, "| claim | scenario | lock | observed verdict | matches expect | reproduced | supports |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, x := range r.Rows {
		fmt.Fprintf(w, "| %s | [%s](#%s) | %s | %s | %s | %s | %s |\n", claimLinks(x.Claims, doc), x.Scenario, x.Scenario,
			x.Lock, x.Observed, matchText(x), r.repeat(x), side(x.Supports))
	}
	if missing := r.uncovered(); len(missing) > 0 && !r.Partial { // a part cannot tell what the whole covers
		fmt.Fprintf(w, "\nClaims with no scenario yet: %s.\n", claimLinks(missing, doc))
	}

	fmt.Fprint(w, "\n## Scenarios\n\n")
	for _, x := range r.Rows {
		fmt.Fprintf(w, "### %s\n\n", x.Scenario)
		fmt.Fprintf(w, "Claims %s, lock `%s`. ", claimLinks(x.Claims, doc), x.Lock)
		if x.Finding != "" {
			fmt.Fprintf(w, "%s ", x.Finding)
		}
		fmt.Fprintf(w, "Supports: %s.\n\n", side(x.Supports))
		fmt.Fprintf(w, "- observed: %s\n", x.Observed)
		if x.Sometimes != "" {
			fmt.Fprintf(w, "- timing-dependent: %s in some runs only; stated rate %s; this run: %d of %d\n",
				x.Sometimes, x.Rate, x.Shown, x.Runs)
		}
		if x.Random {
			fmt.Fprintf(w, "- this run: violation detected under %d of %d seeds; %d of %d matched expect\n", x.Detected, x.Runs, x.Matched, x.Runs)
		}
		fmt.Fprintf(w, "- reproduce: `./bin/lockcheck run %s`", filepath.ToSlash(x.File))
		if x.Random {
			fmt.Fprint(w, " (seed from the file; the rate above is over seeds 1..N)")
		}
		fmt.Fprintln(w)
		if x.Folder != "" {
			fmt.Fprintf(w, "- run folder: `%s`\n", x.Folder)
		}
		fmt.Fprintln(w)
	}

	r.repeatability(w)
}

// repeatability writes the stored measurements: per scenario, how many runs reproduced its
// verdict under each condition, and for a scenario that states a rate, how many showed it.
func (r Report) repeatability(w io.Writer) {
	fmt.Fprint(w, "## Repeatability\n\n")
	if r.Record == nil || len(r.Record.Measurements) == 0 {
		fmt.Fprint(w, "No repeatability record yet: run `make debate-repeat`.\n")
		return
	}
	ms := r.Record.Measurements
	fmt.Fprint(w, "Each deterministic scenario run many times under each condition below, each random-schedule scenario "+
		"once per seed; a run \"reproduces\" when its verdict matches the scenario's expect block. *Quiet*: one run at a "+
		"time on an otherwise idle machine; *loaded*: runs two at a time, so every run has another run beside it (as "+
		"when a CI machine runs a second job). A scenario that states a rate (`sometimes:`) also shows how many runs "+
		"showed that outcome. Real timing varies between runs, so these are measurements, not assumptions.\n\n")
	for _, m := range ms {
		fmt.Fprintf(w, "- %s: measured %s on %s with `%s` (%s)\n", m.Label(), m.Measured.Format("2006-01-02"), m.Machine,
			m.Command, m.Wall.Round(time.Second))
	}
	fmt.Fprint(w, "\n| scenario |")
	for _, m := range ms {
		fmt.Fprintf(w, " %s |", m.Label())
	}
	fmt.Fprint(w, "\n|---|")
	for range ms {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, name := range r.recordScenarios() {
		fmt.Fprintf(w, "| %s |", name)
		for _, m := range ms {
			x, ok := m.row(name)
			if !ok {
				fmt.Fprint(w, " — |")
				continue
			}
			fmt.Fprintf(w, " %s |", measuredText(x))
		}
		fmt.Fprintln(w)
	}
}

// recordScenarios lists the scenarios of the record: the report's order first, then any others.
func (r Report) recordScenarios() []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, x := range r.Rows {
		add(x.Scenario)
	}
	for _, m := range r.Record.Measurements {
		for _, x := range m.Rows {
			add(x.Scenario)
		}
	}
	return out
}

// measuredText is one row of a measurement: "20/20", "seeds: detected 14/20", "20/20; showed 3/20".
func measuredText(x Row) string {
	if x.Random {
		return fmt.Sprintf("%d/%d matched; violation under %d/%d seeds", x.Matched, x.Runs, x.Detected, x.Runs)
	}
	t := fmt.Sprintf("%d/%d", x.Matched, x.Runs)
	if x.Sometimes != "" {
		t += fmt.Sprintf("; showed it %d/%d", x.Shown, x.Runs)
	}
	if x.Errors > 0 {
		t += fmt.Sprintf(" (%d harness errors)", x.Errors)
	}
	return t
}

func matchText(x Row) string {
	rate := ""
	if x.Sometimes != "" {
		verdict := "consistent with"
		if !x.RateOK {
			verdict = "**not** consistent with"
		}
		rate = fmt.Sprintf("; %s in %d/%d, %s its rate %s", x.Sometimes, x.Shown, x.Runs, verdict, x.Rate)
	}
	if x.Runs == 0 {
		return "not run"
	}
	if x.Runs == 1 {
		if x.Errors == 1 {
			return "harness error"
		}
		if x.Matched == 1 {
			return "yes" + rate
		}
		return "**no**" + rate
	}
	return fmt.Sprintf("%d/%d", x.Matched, x.Runs) + rate
}

// repeat is the row's cell of stored repeatability: every measurement's figure.
func (r Report) repeat(x Row) string {
	if r.Record == nil {
		return "not measured"
	}
	var parts []string
	for _, m := range r.Record.Measurements {
		if rec, ok := m.row(x.Scenario); ok {
			if rec.Random {
				parts = append(parts, fmt.Sprintf("%s: detected %d/%d seeds", m.Label(), rec.Detected, rec.Runs))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: %s", m.Label(), measuredText(rec)))
		}
	}
	if len(parts) == 0 {
		return "not measured"
	}
	return strings.Join(parts, "<br>")
}

func side(s string) string {
	switch s {
	case "kleppmann":
		return "Kleppmann"
	case "antirez":
		return "antirez"
	case "both":
		return "both"
	case "neither":
		return "neither"
	}
	return "—"
}

func (r Report) uncovered() []string {
	covered := map[string]bool{}
	for _, x := range r.Rows {
		for _, c := range x.Claims {
			covered[c] = true
		}
	}
	var out []string
	for _, c := range Required {
		if !covered[c] {
			out = append(out, c)
		}
	}
	return out
}
