package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/shard"
)

const workflowFile = "../../.github/workflows/lock-gate.yml"

// The example gate is a valid GitHub Actions workflow: actionlint (syntax, the workflow schema,
// expressions, the known actions' inputs) reports nothing.
func TestWorkflowPassesActionlint(t *testing.T) {
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFile(workflowFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Fatalf("actionlint found %d problem(s):\n%s", len(errs), out.String())
	}
}

// actionlint cannot tell whether lockcheck takes the flags the workflow gives it: every lockcheck
// command line in the workflow must parse with the real command, and a job that runs shards
// --shard ${{ matrix.shard }}/N must have exactly shards 1..N in its job matrix.
func TestWorkflowUsesLockcheckAsItIs(t *testing.T) {
	src, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix map[string]any `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatal(err)
	}
	expr := regexp.MustCompile(`\$\{\{\s*matrix\.shard\s*\}\}`)
	commands, sharded := 0, 0
	for name, job := range wf.Jobs {
		for _, step := range job.Steps {
			for _, line := range strings.Split(step.Run, "\n") {
				fields := strings.Fields(expr.ReplaceAllString(line, "1"))
				i := slices.Index(fields, "./bin/lockcheck")
				if i < 0 {
					continue
				}
				commands++
				args := fields[i+1:]
				root := newRootCommand()
				cmd, rest, err := root.Find(args)
				if err != nil || cmd == root {
					t.Errorf("job %s: %q: not a lockcheck command: %v", name, line, err)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("job %s: %q: %v", name, line, err)
					continue
				}
				if f := cmd.Flags().Lookup("shard"); f != nil && f.Value.String() != "" {
					sharded++
					s, err := shard.Parse(f.Value.String())
					if err != nil {
						t.Errorf("job %s: %q: %v", name, line, err)
						continue
					}
					want := []string{}
					for k := 1; k <= s.N; k++ {
						want = append(want, fmt.Sprint(k))
					}
					got := []string{}
					list, _ := job.Strategy.Matrix["shard"].([]any)
					for _, v := range list {
						got = append(got, fmt.Sprint(v))
					}
					if !slices.Equal(got, want) {
						t.Errorf("job %s runs --shard K/%d but its job matrix has shards %v, want %v", name, s.N, got, want)
					}
				}
			}
		}
	}
	if commands < 4 || sharded < 2 {
		t.Fatalf("found %d lockcheck command(s), %d sharded: the workflow should run, shard and merge", commands, sharded)
	}
}
