package runner

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/history"
)

// Progress shows a run while it runs, fed every event through Options.OnEvent: elapsed and total
// time, operations completed, the faults in force, and the violations seen so far (acquisitions
// made while another client still believed it held the lock; accesses fencing rejected). On a
// terminal it is one line rewritten in place; elsewhere (CI) a plain line every few seconds.
type Progress struct {
	out      io.Writer
	terminal bool
	total    time.Duration
	every    time.Duration
	// Width, when set, cuts the terminal line to the terminal's width: a wrapped line cannot be
	// rewritten in place.
	Width int

	mu       sync.Mutex
	start    int64             // CLOCK_MONOTONIC of the run's start note; 0 until seen
	ops      int               // client operations completed
	faults   map[string]string // open nemesis actions: f/op → label
	holders  map[string]bool   // clients that believe they hold the lock (exclusively)
	shared   map[string]bool   // clients holding a read lock
	overlaps int               // acquisitions while another client held
	rejected int               // register accesses refused by fencing
	shown    bool              // a terminal line is on screen

	stop chan struct{}
	done chan struct{}
}

// NewProgress reports a run of length total on out. terminal selects the rewritten line.
func NewProgress(out io.Writer, total time.Duration, terminal bool) *Progress {
	every := 5 * time.Second
	if terminal {
		every = 200 * time.Millisecond
	}
	return &Progress{out: out, terminal: terminal, total: total, every: every,
		faults: map[string]string{}, holders: map[string]bool{}, shared: map[string]bool{}}
}

// Start begins reporting; Stop ends it. A Progress is started once.
func (p *Progress) Start() {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print()
			}
		}
	}()
}

// Stop ends the reporting and, on a terminal, clears the line so the verdict prints cleanly.
func (p *Progress) Stop() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.stop = nil
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.shown {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.shown = false
	}
}

// Event takes one history event; it is safe for concurrent use (runner.Options.OnEvent).
func (p *Progress) Event(e history.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case e.Process == history.Controller && e.F == history.Start:
		p.start = e.Time
	case e.Process == history.Controller && e.F == history.Crash:
		p.drop(e.Target)
	case e.Process == history.Nemesis:
		key := fmt.Sprintf("%s/%d", e.F, e.Op)
		switch e.Type {
		case history.Invoke:
			p.faults[key] = e.F + " " + e.Target
		case history.OK, history.Fail, history.Info:
			delete(p.faults, key)
			if e.F == history.Kill && e.Type == history.OK {
				p.drop(e.Target)
			}
		}
	case e.Process == history.Resource || e.Process == history.Controller:
	default: // a client
		if e.Type == history.OK || e.Type == history.Fail || e.Type == history.Info {
			p.ops++
		}
		switch {
		case e.F == history.Acquire && e.Type == history.OK:
			if p.heldByOther(e.Process, e.Role == "read") {
				p.overlaps++
			}
			if e.Role == "read" {
				p.shared[e.Process] = true
			} else {
				p.holders[e.Process] = true
			}
		case e.F == history.Release && e.Type == history.Invoke, e.F == history.Lost:
			p.drop(e.Process)
		case (e.F == history.Read || e.F == history.Write) && e.Type != history.Invoke:
			for _, r := range e.Registers {
				if r.Status == history.Rejected {
					p.rejected++
				}
			}
		}
	}
}

func (p *Progress) heldByOther(c string, reader bool) bool {
	for h := range p.holders {
		if h != c {
			return true
		}
	}
	if !reader {
		for h := range p.shared {
			if h != c {
				return true
			}
		}
	}
	return false
}

func (p *Progress) drop(c string) {
	delete(p.holders, c)
	delete(p.shared, c)
}

// Line is the progress as one line of text.
func (p *Progress) Line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.line()
}

func (p *Progress) line() string {
	elapsed := time.Duration(0)
	if p.start != 0 {
		elapsed = time.Duration(history.Now() - p.start)
	}
	faults := "none"
	if len(p.faults) > 0 {
		labels := make([]string, 0, len(p.faults))
		for _, l := range p.faults {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		faults = strings.Join(labels, ", ")
	}
	// "faults in force": the faults acting now, which "faults: none" read as a run without any.
	return fmt.Sprintf("%5.1fs/%s  ops %d  faults in force: %s  overlapping holds so far: %d  fencing rejections: %d",
		elapsed.Seconds(), p.total, p.ops, faults, p.overlaps, p.rejected)
}

func (p *Progress) print() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start == 0 {
		return // servers still starting
	}
	if p.terminal {
		l := p.line()
		if p.Width > 1 && len(l) >= p.Width {
			l = l[:p.Width-1]
		}
		fmt.Fprint(p.out, "\r\x1b[K"+l)
		p.shown = true
		return
	}
	fmt.Fprintln(p.out, "progress: "+p.line())
}
