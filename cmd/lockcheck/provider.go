package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/providers"
)

// addProviderFlag adds --provider, which overrides every scenario's provider: field, and
// --endpoints, the external provider's endpoints file.
func addProviderFlag(cmd *cobra.Command, provider, endpoints *string) {
	cmd.Flags().StringVar(endpoints, "endpoints", "", "the endpoints file naming your cluster's nodes and fault hooks (--provider external)")
	cmd.Flags().StringVar(provider, "provider", "", fmt.Sprintf("where the lock service's servers run, overriding the scenario's provider: "+
		"field (%s; default: the scenario's, else %s)",
		strings.Join(providers.Names(), ", "), providers.Default))
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if *provider != "" && !slices.Contains(providers.Names(), *provider) {
			return &exitError{exitHarness, fmt.Errorf("--provider: %w", providers.Unknown(*provider))}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
