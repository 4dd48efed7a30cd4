package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	runpage "github.com/lockcheck/lockcheck/report"
)

func newReportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_FOLDER",
		Short: "Write (again) a run folder's report.html from its history, verdict and scenario",
		Long: `Build RUN_FOLDER/report.html: the verdict in words, the ownership timeline with the faults,
latency and throughput plots, and links to porcupine's views. run and check write it already;
this regenerates it (after an upgrade, say) without re-judging.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runpage.Write(args[0]); err != nil {
				return &exitError{exitHarness, err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "report:", filepath.Join(args[0], runpage.ReportFile))
			return nil
		},
	}
}
