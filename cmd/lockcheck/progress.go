package main

import (
	"os"
	"time"

	"golang.org/x/term"

	"github.com/lockcheck/lockcheck/runner"
)

// newProgress shows a run's progress on stderr (stdout keeps the verdict): one line rewritten in
// place on a terminal, a plain line every few seconds otherwise (CI logs).
func newProgress(total time.Duration) *runner.Progress {
	fd := int(os.Stderr.Fd())
	tty := term.IsTerminal(fd)
	p := runner.NewProgress(os.Stderr, total, tty)
	if tty {
		if w, _, err := term.GetSize(fd); err == nil {
			p.Width = w
		}
	}
	return p
}
