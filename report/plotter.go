package report

import (
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// Plots draws a page's plots as inline SVG. Package report/plots is the drawer (gonum/plot),
// which a program links by importing it: lockcheck does; make run's quick-start build and a
// lockchecktest check do not, and their pages say how to draw the plots.
type Plots interface {
	Latency(PlotRun) (string, error)
	Throughput(PlotRun) (string, error)
}

var plots Plots

// SetPlots makes p the drawer of every page's plots.
func SetPlots(p Plots) { plots = p }

// PlotRun is what the plots draw of a run: its span, its clients, its acquires, its faults and
// when each client operation completed (CLOCK_MONOTONIC nanoseconds).
type PlotRun struct {
	Start, End  int64
	Clients     []string
	Acquires    []PlotAcquire
	Faults      []checker.Fault
	Completions []int64
	Long        bool // too long to draw one point per acquire
}

// PlotAcquire is one acquire: when it was asked, when it completed (0: never), whether it got
// the lock.
type PlotAcquire struct {
	Client       string
	Invoke, Done int64
	OK           bool
}

const plotsLeftOut = `<p>This page was written by a program that draws no plots (a lockchecktest check, or the ` +
	`quick-start build of <code>make run</code>, which build faster without them): <code>lockcheck report RUN_FOLDER</code> ` +
	`(in lockcheck's checkout: <code>make build</code>, then <code>./bin/lockcheck report RUN_FOLDER</code>, draws them).</p>`

type opCounts struct{}

func countOps(*run) opCounts { return opCounts{} }

func latencyPlot(r *run) (string, error) {
	if plots == nil {
		return plotsLeftOut, nil
	}
	return plots.Latency(r.plotRun())
}

func throughputPlot(r *run, _ opCounts) (string, error) {
	if plots == nil {
		return "", nil
	}
	return plots.Throughput(r.plotRun())
}

func (r *run) plotRun() PlotRun {
	p := PlotRun{Start: r.start, End: r.end, Clients: r.clients, Faults: r.faults, Completions: r.completions, Long: r.long}
	for _, a := range r.acquires {
		p.Acquires = append(p.Acquires, PlotAcquire{Client: a.client, Invoke: a.invoke, Done: a.done, OK: a.outcome == string(history.OK)})
	}
	return p
}

// NiceStep, TickLabel and FaultColor are the page's own ticks and colours, for the plots.
func NiceStep(span time.Duration, n int) time.Duration { return niceStep(span, n) }
func TickLabel(d, step time.Duration) string           { return tickLabel(d, step) }
func FaultColor(kind string) string                    { return faultColor(kind) }
