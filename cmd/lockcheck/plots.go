//go:build !quickstart

package main

// The reports lockcheck writes have plots; make run's quick-start build leaves them out
// (gonum/plot and what it brings were about a tenth of that build's time on a fresh machine).
import _ "github.com/lockcheck/lockcheck/report/plots"
