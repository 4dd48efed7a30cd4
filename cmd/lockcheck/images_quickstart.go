//go:build quickstart

package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/internal/quickstart"
)

// The quick-start build links no Docker client: its images command only says how to get one.
func newImagesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "images",
		Short: "Build the container images the docker provider runs (not in this build)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &exitError{exitHarness, errors.New("the docker provider is not built in" + quickstart.Missing())}
		},
	}
}
