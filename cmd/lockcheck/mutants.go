//go:build mutants

package main

import "github.com/lockcheck/lockcheck/locks"

// Built with the mutants tag (go build -tags mutants ./cmd/lockcheck), lockcheck knows the mutant
// designs too (locks/mutants.go), in the controller and in its workers, which are this binary:
// how a changed design is gated against its original with lockcheck matrix --baseline-lock, and
// how the baseline gate is shown to catch one. A binary built without the tag never lists them.
func init() { locks.Mutants() }
