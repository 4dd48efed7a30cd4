package plots

import (
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

// The drawer draws each client's acquires, the failures and the faults into inline SVG elements
// the page finds by id.
func TestPlotsAreInlineSVG(t *testing.T) {
	s := int64(time.Second)
	r := report.PlotRun{Start: 0, End: 3 * s, Clients: []string{"client-1", "client-2"},
		Acquires: []report.PlotAcquire{{Client: "client-1", Invoke: s / 10, Done: s / 5, OK: true},
			{Client: "client-2", Invoke: s, Done: 2 * s, OK: false}, {Client: "client-2", Invoke: 2 * s, Done: 0}},
		Faults:      []checker.Fault{{Kind: "partition", Target: "client-2", Start: s, End: 2 * s}},
		Completions: []int64{s / 5, 2 * s}}
	latency, err := drawer{}.Latency(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg id="plot-latency" class="plot"`, "client-1", "failed", "partition client-2"} {
		if !strings.Contains(latency, want) {
			t.Errorf("latency plot lacks %q", want)
		}
	}
	throughput, err := drawer{}.Throughput(r)
	if err != nil || !strings.Contains(throughput, `<svg id="plot-throughput"`) || !strings.Contains(throughput, "acquisitions/s") {
		t.Errorf("throughput plot: %v\n%.300s", err, throughput)
	}
}
