package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/adapters"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
)

func newListCommand() *cobra.Command {
	var wide, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the lock designs with their properties",
		Long: `List the lock designs with their properties, in 100 columns. -v adds each design's source,
fencing token, failure modes, scenarios, program points and the matrix columns that do not apply
to it; --wide prints one line per design with every column, however wide; --json is for tools.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			verbose, _ := cmd.Flags().GetBool("verbose")
			mode := listNarrow
			switch {
			case asJSON:
				mode = listJSON
			case wide:
				mode = listWide
			case verbose:
				mode = listVerbose
			}
			return writeList(cmd.OutOrStdout(), designRows(locks.All()), mode)
		},
	}
	cmd.Flags().BoolVar(&wide, "wide", false, "one line per design with every column (source, the fencing token in full), however wide")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for tools (stable field names: name, service, nodes, expires, waits, ...)")
	return cmd
}

// designRow is one design as lockcheck list shows it; its JSON names are stable for tools.
type designRow struct {
	Name          string   `json:"name"`
	Service       string   `json:"service"`
	Nodes         int      `json:"nodes"`
	Expires       bool     `json:"expires"`
	Waits         string   `json:"waits"`    // blocks | polls
	WaitsBy       string   `json:"waits_by"` // how, in words
	Token         string   `json:"fencing_token"`
	Promise       string   `json:"promise"` // what a yes of the lock promises, at a 1 s TTL (VERDICTS.md, promises)
	Fair          bool     `json:"first_come_first_served"`
	VariantOf     string   `json:"variant_of,omitempty"`
	Source        string   `json:"source"`
	Summary       string   `json:"summary"`
	Protects      string   `json:"protects_against"`
	FailureModes  []string `json:"failure_modes"`
	Scenarios     []string `json:"scenarios"`
	Points        []string `json:"program_points"`
	Usage         []string `json:"usage"` // the usage steps it offers (locks.UsageSteps)
	NotApplicable []string `json:"matrix_columns_not_applicable"`
}

func designRows(designs []locks.Design) []designRow {
	var rows []designRow
	for _, d := range designs {
		rows = append(rows, designRow{Name: d.Name, Service: d.ServiceName(), Nodes: d.Nodes, Expires: d.Expires,
			Waits: waitsWord(d), WaitsBy: d.WaitsBy(), Token: d.Token, Fair: d.Fair, VariantOf: d.VariantOf, Source: d.Source, Summary: d.Summary,
			Protects: d.Protects, FailureModes: nonNil(d.FailureModes), Scenarios: nonNil(d.Scenarios),
			Promise: d.PromiseRule(locks.Env{TTL: time.Second}).Words,
			Points:  nonNil(d.Points), Usage: nonNil(d.Offered()), NotApplicable: nonNil(matrix.NotApplicable(d))})
	}
	return rows
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type listMode int

const (
	listNarrow  listMode = iota // one table in 100 columns
	listVerbose                 // the table, then each design in detail, in 100 columns
	listWide                    // one line per design, every column
	listJSON
)

// writeList renders the designs: the one place list's output is made.
func writeList(out io.Writer, rows []designRow, mode listMode) error {
	if mode == listJSON {
		if rows == nil {
			rows = []designRow{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if mode == listWide {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LOCK\tSERVICE\tNODES\tEXPIRES\tWAITS\tFENCING TOKEN\tSOURCE\tSUMMARY")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%s\t%s\t%s\t%s\n", r.Name, r.Service, r.Nodes, r.Expires, r.Waits, r.Token, r.Source, r.Summary)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else {
		t := table{header: []string{"LOCK", "SERVICE", "NODES", "LEASE", "WAITS", "TOKEN", "SUMMARY"}, wrap: true}
		for _, r := range rows {
			token := "yes"
			if r.Token == "none" {
				token = "none"
			}
			t.add(r.Name, r.Service, fmt.Sprint(r.Nodes), yesNo(r.Expires), r.Waits, token, r.Summary)
		}
		if err := t.write(out, screenWidth); err != nil {
			return err
		}
	}
	para := func(text string) { fmt.Fprintf(out, "\n%s\n", wrap(text, screenWidth, "")) }
	para("LEASE: the lock frees itself after the TTL. WAITS: how the workload waits for a held lock. blocks: one acquire " +
		"attempt waits for the release itself (a message, a watch) until its time is up (4 × workload.timeout, at most " +
		"acquire_timeout); polls: a try-lock, the worker tries again after backoff_min..backoff_max. TOKEN: whether it " +
		"hands out a fencing token (-v says which).")
	if mode == listVerbose {
		for _, r := range rows {
			fmt.Fprintf(out, "\n%s\n", r.Name)
			field := func(name, text string) {
				fmt.Fprintf(out, "%s\n", wrap("  "+name+": "+text, screenWidth, "      "))
			}
			field("source", r.Source)
			field("fencing token", r.Token)
			field("protects against", r.Protects)
			field("waits", r.WaitsBy)
			field("a yes promises (at a 1 s TTL)", r.Promise)
			if r.VariantOf != "" {
				field("variant of", r.VariantOf+", for a published bug's reproduction (left out of the default matrix)")
			}
			if r.Fair {
				field("promises first come, first served", "an unfair overtake makes a run damaged")
			}
			fmt.Fprintln(out, "  fails when:")
			for _, f := range r.FailureModes {
				fmt.Fprintf(out, "%s\n", wrap("    - "+f, screenWidth, "      "))
			}
			field("scenarios", strings.Join(r.Scenarios, ", "))
			if len(r.Points) > 0 {
				field("its own program points", strings.Join(r.Points, ", "))
			}
			field("usage it offers", strings.Join(nonNil(r.Usage), ", "))
			if len(r.NotApplicable) > 0 {
				field("matrix columns that do not apply", strings.Join(r.NotApplicable, "; "))
			}
		}
	}
	listLibraries(out, mode)
	para("program points a scenario can stop a client at: " + strings.Join(workloads.Points, ", "))
	var steps []string
	for _, u := range locks.UsageSteps {
		steps = append(steps, u.Name+" ("+u.Means+")")
	}
	para("usage steps a scenario can ask of a client (-v says which each design offers; workload: {usage: {reenter: N, " +
		"try: WAIT, release-retry: N}}, and {fault: abandon, target: waiter, point: P} in its nemesis): " + strings.Join(steps, "; "))
	if mode == listNarrow {
		para("lockcheck list -v: each design's source, token, failure modes and scenarios; --wide, --json: more.")
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// listLibraries lists the Go libraries a scenario can name at a version (LIB@VERSION).
func listLibraries(out io.Writer, mode listMode) {
	fmt.Fprintf(out, "\n%s\n", wrap("Go libraries at a version: name LIB@VERSION (e.g. redsync@v4.0.3, zk@v1.0.1) as a scenario's "+
		"lock or in --locks. It keeps the properties of the design LIB above and runs the library at VERSION through the "+
		"lock-client protocol, built on first use with the go tool (from the Go module proxy) into the user's cache folder "+
		"(lockcheck/go-adapters).", screenWidth, ""))
	t := table{header: []string{"LIB", "VERSIONS", "MODULE"}, wrap: true}
	if mode == listWide {
		t.header = append(t.header, "ADAPTER")
	}
	for _, l := range locks.Libraries {
		for i, line := range l.Lines {
			name := l.Name
			if i > 0 {
				name = ""
			}
			cells := []string{name, line.Versions, line.Module}
			if mode == listWide {
				cells = append(cells, "adapters/_go/"+strings.Join(adapters.GoFiles(line.Adapter), " + "))
			}
			t.add(cells...)
		}
	}
	width := screenWidth
	if mode == listWide {
		width = 1 << 20
	}
	_ = t.write(out, width)
}

// waitsWord is the list's WAITS column: whether one acquire attempt of the workload blocks until
// the lock is free (a message, a watch) or is a try whose waiting is the worker's retries.
func waitsWord(d locks.Design) string {
	if d.Blocking != "" {
		return "blocks"
	}
	return "polls"
}

func newFaultsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "faults",
		Short: "List the fault kinds a scenario's nemesis may name, with the fields each takes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FAULT\tFIELDS\tRANDOM PACKAGES\tWHAT IT DOES")
			for _, k := range nemesis.Kinds() {
				random := "no"
				if k.Suits != nil {
					random = k.SuitsWhom
				}
				fields := append([]string{"target", "at | point"}, k.Takes...)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, strings.Join(fields, ", "), random, k.Summary)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			// The targets that follow the lock, for any fault a client can take.
			fmt.Fprintln(cmd.OutOrStdout(), "\nA client fault's target may be a lock state, resolved when the fault starts (durations may be in "+
				"TTLs: for: 4ttl):")
			for _, r := range nemesis.ClientRoles {
				fmt.Fprintf(cmd.OutOrStdout(), "  %-10s %s\n", r.Name, r.Role)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Random packages take mode: %s (hunt aims each fault at a client in one of these states, when it can matter).\n",
				strings.Join(nemesis.Modes, " | "))
			return nil
		},
	}
}

func newWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run one client (started by the controller; reads its config on stdin)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return workloads.Run()
		},
	}
}
