//go:build !quickstart

package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/providers/docker/images"
)

func newImagesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "images",
		Short: "Build the container images the docker provider runs (only what is missing)",
		Long: `Build the docker provider's images on this machine, from Debian's packages (no registry is
needed): a base image made with debootstrap (iptables, libfaketime), then one image per server
type from the Dockerfiles in providers/docker/images/. An image that exists already is reused;
a changed Dockerfile gets a new tag and is built. Needs a Docker daemon, and root for debootstrap.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			cli, err := images.Connect(cmd.Context())
			if err != nil {
				return &exitError{exitHarness, err}
			}
			defer cli.Close()
			b := images.NewBuilder(cli)
			b.Log = func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...) }
			began := time.Now()
			built, err := b.EnsureAll(cmd.Context())
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tSTATUS")
			for _, img := range built {
				status := "present, reused"
				if img.Built {
					status = "built in " + img.Took.Round(100*time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\n", img.Ref, status)
			}
			tw.Flush()
			if err != nil {
				return &exitError{exitHarness, err}
			}
			fmt.Fprintf(out, "images ready (%s)\n", time.Since(began).Round(100*time.Millisecond))
			return nil
		},
	}
}
