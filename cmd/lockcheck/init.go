package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockcheck/lockcheck/internal/starter"
	"github.com/lockcheck/lockcheck/services"
)

func newInitCommand() *cobra.Command {
	var o starter.Options
	var force bool
	var library string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a starter set into this repository: a lock adapter template, its scenarios, a CI workflow",
		Long: `Write a starter set for checking your own lock, asking nothing: an adapter template in the
language you choose (--lang), which as written is a correct lock and passes every check; its
design file; a scenario set (a no-fault control, K2, K3 and every generic fault that applies to
the design), each with the verdict a gate should require; and a GitHub Actions workflow that runs
them on every push and keeps the run folders as an artifact. Then run the command it prints, put
your own lock in the template, and run the set again.

--lang go writes a Go test using package lockchecktest (the set is its table of checks); python
and java write programs speaking the lock-client protocol (docs/LOCK-PROTOCOL.md); program
writes one in POSIX sh, for any other language. Existing files are never overwritten without
--force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if library != "" {
				return initLibrary(cmd.OutOrStdout(), o, library, force)
			}
			o.Version = moduleVersion()
			files, columns, next, err := starter.Plan(o)
			if err != nil {
				return &exitError{exitHarness, err}
			}
			if err := starter.Write(files, force); err != nil {
				return &exitError{exitHarness, err}
			}
			out := cmd.OutOrStdout()
			for _, f := range files {
				fmt.Fprintf(out, "wrote %s\n", f.Path)
			}
			var faults []string
			for _, c := range columns {
				faults = append(faults, c.Fault)
			}
			fmt.Fprintf(out, "\nchecks: %s\n", wrap(strings.Join(faults, ", "), screenWidth-8, "        "))
			fmt.Fprintf(out, "next: %s\n", next)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Lang, "lang", "", "the adapter's language: go, python, java or program (any language, through the protocol)")
	f.StringVar(&o.Service, "service", "", "the lock service: "+strings.Join(services.Names(), ", ")+" (default: the language's first template; "+
		"not every language has a template for each)")
	f.StringVar(&o.Dir, "dir", "lockcheck", "folder for the starter set, relative to the repository's root")
	f.StringVar(&o.Workflow, "workflow", "", `the CI workflow's path (default .github/workflows/lockcheck.yml; "-": none)`)
	f.BoolVar(&force, "force", false, "overwrite files that exist")
	f.StringVar(&library, "library", "", "with --lang go: a Go adapter of the library MODULE@VERSION and its design file, "+
		"to check it at any version (lockcheck matrix --locks DIR/NAME.yaml@V1,DIR/NAME.yaml@V2); --service picks the template's service "+
		"(every service has one; default redis)")
	_ = cmd.MarkFlagRequired("lang")
	return cmd
}

// moduleVersion is the version of lockcheck this binary was installed at (go install ...@v1.2.3),
// for the workflow to install the same; "" (latest) for a build from a checkout.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" || strings.Contains(v, "+dirty") {
		return ""
	}
	return v
}
