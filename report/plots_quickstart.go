//go:build quickstart

package report

// make run's quick-start build draws no plots: gonum/plot and what it imports were about a tenth
// of that build's time on a fresh machine. The page says how to get them.
const plotsLeftOut = `<p>The quick-start build of <code>make run</code> leaves the plots out to build faster: ` +
	`<code>make build</code>, then <code>./bin/lockcheck report RUN_FOLDER</code>, draws them.</p>`

type opCounts struct{}

func countOps(*run) opCounts                        { return opCounts{} }
func latencyPlot(*run) (string, error)              { return plotsLeftOut, nil }
func throughputPlot(*run, opCounts) (string, error) { return "", nil }
