package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	runpage "github.com/lockcheck/lockcheck/report"
)

func newServeCommand() *cobra.Command {
	var resultsDir string
	var port int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Browse the results folder: runs newest first with their verdicts, reports and matrices (127.0.0.1 only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if st, err := os.Stat(resultsDir); err != nil || !st.IsDir() {
				return &exitError{exitHarness, fmt.Errorf("results folder %s: not a folder (run a scenario first, or pass --results)", resultsDir)}
			}
			h, err := runpage.Browse(resultsDir)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			// Loopback only: the results hold logs and histories, not for the network.
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return &exitError{exitHarness, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C to stop)\n", resultsDir, ln.Addr())
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-cmd.Context().Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return &exitError{exitHarness, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&resultsDir, "results", "results", "results folder to browse")
	cmd.Flags().IntVar(&port, "port", 8600, "port on 127.0.0.1 (0: any free port)")
	return cmd
}
