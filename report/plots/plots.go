// Package plots draws a report's plots with gonum/plot, as SVG inlined in the page: no script, no
// network. Importing it (for its side effect) gives package report its plots: lockcheck does,
// make run's quick-start build and a lockchecktest check do not (gonum/plot, its fonts and image
// packages are 143 of the 558 packages a check linked, and megabytes of its test binary), and
// their pages say how to draw them (lockcheck report RUN_FOLDER).
package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/report"
)

func init() { report.SetPlots(drawer{}) }

// drawer is report.Plots.
type drawer struct{}

func (drawer) Latency(r report.PlotRun) (string, error) { return latencyPlot(&run{r}) }
func (drawer) Throughput(r report.PlotRun) (string, error) {
	return throughputPlot(&run{r}, countOps(&run{r}))
}

// run is what a plot draws, with the names the drawing code reads.
type run struct{ report.PlotRun }

func (r *run) sec(t int64) float64 { return float64(t-r.Start) / 1e9 }

const (
	plotWidth  = 15 * vg.Inch // about the page's width in CSS pixels, so fonts keep their size
	plotHeight = 3.1 * vg.Inch
)

// maxScatter is the most acquires drawn one point each; a long run's latency is drawn per slice
// of time instead (its median, 99th percentile and maximum), and at most maxScatter failures.
const maxScatter = 5000

// latencyPlot: every acquire at the time it completed, by how long it took; failures as crosses.
func latencyPlot(r *run) (string, error) {
	p := newPlot(r, "acquire latency", "acquire latency (ms)")
	if len(r.Acquires) > maxScatter {
		if err := latencyLines(r, p); err != nil {
			return "", err
		}
		return render(p, "plot-latency")
	}
	byClient := map[string]plotter.XYs{}
	var failed plotter.XYs
	for _, a := range r.Acquires {
		if a.Done == 0 {
			continue
		}
		pt := plotter.XY{X: r.sec(a.Done), Y: float64(a.Done-a.Invoke) / 1e6}
		if a.OK {
			byClient[a.Client] = append(byClient[a.Client], pt)
		} else {
			failed = append(failed, pt)
		}
	}
	for i, c := range r.Clients {
		pts := byClient[c]
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Radius: vg.Points(2.6), Shape: draw.CircleGlyph{}}
		p.Add(s)
		p.Legend.Add(c, s)
	}
	if len(failed) > 0 {
		s, err := plotter.NewScatter(failed)
		if err != nil {
			return "", err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{R: 200, G: 30, B: 30, A: 255}, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
		p.Add(s)
		p.Legend.Add("failed", s)
	}
	p.Y.Min = 0
	headroom(p)
	return render(p, "plot-latency")
}

// latencyLines draws a long run's acquire latency per slice of time: median, 99th percentile and
// maximum of the acquisitions completed in it; failures as crosses (the slowest per slice when
// there are too many to draw each).
func latencyLines(r *run, p *plot.Plot) error {
	const bins = 300
	span := float64(max(r.End-r.Start, 1))
	per := make([][]float64, bins)
	failed := make([]plotter.XYs, bins)
	nFailed := 0
	for _, a := range r.Acquires {
		if a.Done == 0 {
			continue
		}
		i := min(bins-1, max(0, int(float64(a.Done-r.Start)/span*bins)))
		ms := float64(a.Done-a.Invoke) / 1e6
		if a.OK {
			per[i] = append(per[i], ms)
		} else {
			failed[i] = append(failed[i], plotter.XY{X: r.sec(a.Done), Y: ms})
			nFailed++
		}
	}
	lines := []struct {
		name  string
		q     float64
		color color.Color
	}{
		{"max", 1, color.RGBA{R: 150, G: 150, B: 150, A: 255}},
		{"p99", 0.99, color.RGBA{R: 255, G: 127, B: 14, A: 255}},
		{"p50", 0.5, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	}
	for _, l := range lines {
		var pts plotter.XYs
		for i, v := range per {
			if len(v) == 0 {
				continue
			}
			sort.Float64s(v)
			pts = append(pts, plotter.XY{X: (float64(i) + 0.5) / bins * span / 1e9, Y: v[min(len(v)-1, int(l.q*float64(len(v))))]})
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color, line.Width = l.color, vg.Points(1.3)
		p.Add(line)
		p.Legend.Add(l.name+" per "+checker.Human(time.Duration(span/bins)), line)
	}
	var crosses plotter.XYs
	for _, f := range failed {
		if nFailed <= maxScatter {
			crosses = append(crosses, f...)
			continue
		}
		if len(f) > 0 {
			worst := f[0]
			for _, pt := range f {
				if pt.Y > worst.Y {
					worst = pt
				}
			}
			crosses = append(crosses, worst)
		}
	}
	if len(crosses) > 0 {
		s, err := plotter.NewScatter(crosses)
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{R: 200, G: 30, B: 30, A: 255}, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
		p.Add(s)
		name := "failed"
		if nFailed > maxScatter {
			name = "failed (slowest per slice)"
		}
		p.Legend.Add(name, s)
	}
	p.Y.Min = 0
	headroom(p)
	return nil
}

// throughputPlot: completed client operations and acquisitions per second, in bins.
func throughputPlot(r *run, events opCounts) (string, error) {
	p := newPlot(r, "throughput", "per second")
	lines := []struct {
		name  string
		times []int64
		color color.Color
	}{
		{"operations ok/s", events.ok, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{"acquisitions/s", events.acquired, color.RGBA{R: 44, G: 160, B: 44, A: 255}},
	}
	bin := binWidth(time.Duration(r.End-r.Start), r.Long)
	n := int(math.Ceil(float64(r.End-r.Start) / float64(bin)))
	for _, l := range lines {
		counts := make([]float64, max(n, 1))
		for _, t := range l.times {
			i := int((t - r.Start) / int64(bin))
			if i >= 0 && i < len(counts) {
				counts[i]++
			}
		}
		// A step line: each bin's rate drawn flat across the bin.
		pts := make(plotter.XYs, 0, 2*len(counts))
		for i, c := range counts {
			rate := c / bin.Seconds()
			x0 := float64(i) * bin.Seconds()
			pts = append(pts, plotter.XY{X: x0, Y: rate}, plotter.XY{X: math.Min(x0+bin.Seconds(), r.sec(r.End)), Y: rate})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return "", err
		}
		line.Color, line.Width = l.color, vg.Points(1.6)
		p.Add(line)
		p.Legend.Add(l.name, line)
	}
	p.Y.Min = 0
	headroom(p)
	return render(p, "plot-throughput")
}

// opCounts are completion times of client operations.
type opCounts struct{ ok, acquired []int64 }

func countOps(r *run) opCounts {
	c := opCounts{ok: r.Completions}
	for _, a := range r.Acquires {
		if a.OK {
			c.acquired = append(c.acquired, a.Done)
		}
	}
	return c
}

// binWidth gives about 40 bins (200 for a long run), at least 100ms wide.
func binWidth(span time.Duration, long bool) time.Duration {
	if long {
		return max(report.NiceStep(span, 200), 100*time.Millisecond)
	}
	return max(report.NiceStep(span, 40), 100*time.Millisecond)
}

func newPlot(r *run, title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, r.sec(r.End)
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.ThumbnailWidth = vg.Points(14)
	// Sans text, measured with Liberation Sans: browsers draw it with that font or one of the
	// same metrics (Arimo, Arial; see report.css), so labels and legends fit as laid out.
	p.Title.TextStyle.Font.Size, p.Title.TextStyle.Font.Variant = vg.Points(12), "Sans"
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size, a.Label.TextStyle.Font.Variant = vg.Points(10), "Sans"
		a.Tick.Label.Font.Size, a.Tick.Label.Font.Variant = vg.Points(9), "Sans"
	}
	p.Legend.TextStyle.Font.Size, p.Legend.TextStyle.Font.Variant = vg.Points(10), "Sans"
	p.Legend.Padding = vg.Points(3)
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(4)
	p.X.Tick.Marker = secondTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	p.Add(&faultShade{r: r, faults: r.Faults})
	return p
}

// maxPlotLabels: with more faults than this, the plots shade them without labels.
const maxPlotLabels = 40

// faultShade shades each fault's window across the plot, in its kind's colour, and labels it.
type faultShade struct {
	r      *run
	faults []checker.Fault
}

func (s *faultShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	style := p.X.Tick.Label
	style.Font.Size = vg.Points(8)
	style.XAlign, style.YAlign = draw.XLeft, draw.YTop
	for _, f := range s.faults {
		col := hexColor(report.FaultColor(f.Kind))
		x0 := max(trX(s.r.sec(f.Start)), c.Min.X)
		x1 := min(trX(s.r.sec(f.End)), c.Max.X)
		if x1 < x0 {
			continue
		}
		if x1-x0 < vg.Points(1.5) { // an instant action: a line
			c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x0, c.Min.Y, x0, c.Max.Y)
		} else {
			fill := color.NRGBA{R: col.R, G: col.G, B: col.B, A: 46}
			c.FillPolygon(fill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		}
		if len(s.faults) > maxPlotLabels {
			continue // the timeline names them; here they would only pile up
		}
		style.Color = color.RGBA{R: col.R * 7 / 10, G: col.G * 7 / 10, B: col.B * 7 / 10, A: 255}
		c.FillText(style, vg.Point{X: x0 + vg.Points(3), Y: c.Max.Y - vg.Points(3)}, f.Kind+" "+f.Target)
	}
}

func hexColor(hex string) color.RGBA {
	var r, g, b uint8
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		return color.RGBA{A: 255}
	}
	return color.RGBA{R: r, G: g, B: b, A: 255}
}

// render writes the plot as an SVG element for inlining: without the XML prolog, scaling to the
// page's width.
func render(p *plot.Plot, id string) (string, error) {
	wt, err := p.WriterTo(plotWidth, plotHeight, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("plot %s: no <svg> element in the rendering", id)
	}
	return `<svg id="` + id + `" class="plot"` + s[i+len("<svg"):], nil
}

// headroom leaves the top of the plot to the legend and the fault labels.
func headroom(p *plot.Plot) {
	if p.Y.Max > p.Y.Min {
		p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)*1.3
	}
}

// secondTicks puts a labelled tick on round seconds (or fractions, for short runs).
type secondTicks struct{}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	step := report.NiceStep(time.Duration((hi-lo)*1e9), 10)
	minor := report.NiceStep(time.Duration((hi-lo)*1e9), 50)
	var out []plot.Tick
	for d := time.Duration(0); d.Seconds() <= hi+1e-9; d += minor {
		t := plot.Tick{Value: d.Seconds()}
		if d%step == 0 {
			t.Label = report.TickLabel(d, step)
		}
		out = append(out, t)
	}
	return out
}

// plainTicks are gonum's default ticks, labelled without trailing zeros ("2500", not "2500.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
