package report

// The page's tests check that the plots land in the page; report/plots's own test draws them.
// (Package report's tests cannot import report/plots, which imports report.)
func init() { SetPlots(stubPlots{}) }

type stubPlots struct{}

func (stubPlots) Latency(PlotRun) (string, error) {
	return `<svg id="plot-latency" class="plot"></svg>`, nil
}
func (stubPlots) Throughput(PlotRun) (string, error) {
	return `<svg id="plot-throughput" class="plot"></svg>`, nil
}
