package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/matrix"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workloads"
)

func newListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the lock designs with their properties",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			verbose, _ := cmd.Flags().GetBool("verbose")
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LOCK\tSERVICE\tNODES\tEXPIRES\tWAITS\tFENCING TOKEN\tSOURCE\tSUMMARY")
			for _, d := range locks.All() {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%s\t%s\t%s\t%s\n", d.Name, d.ServiceName(), d.Nodes, d.Expires, waitsWord(d), d.Token, d.Source, d.Summary)
			}
			tw.Flush()
			fmt.Fprintln(out, "\nWAITS: how the workload waits for a held lock. blocks: one acquire attempt waits for the release itself "+
				"(a message, a watch) until its time is up (4 × workload.timeout, at most acquire_timeout); polls: a try-lock, "+
				"the worker tries again after backoff_min..backoff_max.")
			if verbose {
				for _, d := range locks.All() {
					fmt.Fprintf(out, "\n%s\n  protects against: %s\n  waits: %s\n  fails when:\n", d.Name, d.Protects, d.WaitsBy())
					for _, f := range d.FailureModes {
						fmt.Fprintf(out, "    - %s\n", f)
					}
					fmt.Fprintf(out, "  scenarios: %s\n", strings.Join(d.Scenarios, ", "))
					if len(d.Points) > 0 {
						fmt.Fprintf(out, "  its own program points: %s\n", strings.Join(d.Points, ", "))
					}
					if na := matrix.NotApplicable(d); len(na) > 0 {
						fmt.Fprintf(out, "  matrix columns that do not apply: %s\n", strings.Join(na, "; "))
					}
				}
			}
			fmt.Fprintf(out, "\nprogram points a scenario can stop a client at: %s\n", strings.Join(workloads.Points, ", "))
			return nil
		},
	}
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
