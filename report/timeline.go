package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/nemesis"
)

// The ownership timeline is SVG written here rather than by a plotting library: it is a Gantt
// chart of lanes, bars and marks, each with hover details, which plotting libraries do not draw.
// Coordinates are in viewBox units; the page scales the drawing to its width.
const (
	tlWidth   = 1200.0
	tlLeft    = 92.0 // lane names
	tlRight   = 14.0
	tlAxis    = 22.0 // tick labels above the lanes
	tlLabelH  = 14.0 // one row of fault labels
	tlMarkRow = 14.0 // the "2+ holders" row
	tlHoldH   = 18.0
	tlRegH    = 9.0 // one register's row of access marks
	tlLaneGap = 10.0
	charWidth = 6.2 // of the 11px label font, for placing labels without overlap
)

// faultColor gives each kind of fault its colour (the fault registry's), in the timeline and the
// plots alike; a kind this build does not know gets grey and is otherwise drawn the same way.
func faultColor(kind string) string { return nemesis.Colour(kind) }

// view is the span of time a drawing shows: the whole run, or a detail window of a long one.
type view struct{ from, to int64 }

func (v view) x(t int64) float64 {
	span := float64(max(v.to-v.from, 1))
	return tlLeft + (tlWidth-tlLeft-tlRight)*math.Max(0, math.Min(1, float64(t-v.from)/span))
}

// shows tells whether a span [a, b] is (partly) in view.
func (v view) shows(a, b int64) bool { return b >= v.from && a <= v.to }

type timeline struct {
	r         *run
	v         view
	b         strings.Builder
	laneTop   map[string]float64
	faults    []checker.Fault // those in view
	faultRows []int           // label row of each
	height    float64
}

func (r *run) offset(t int64) string { return checker.Seconds(time.Duration(t - r.start)) }

// timelineSVG draws the lanes of what happened in v: one per client with its believed holds, the
// windows in which two clients held at once, the nemesis's faults, and every access with each
// register's outcome. id names the drawing: "timeline" for a whole run.
func timelineSVG(r *run, v view, id string) string {
	tl := &timeline{r: r, v: v, laneTop: map[string]float64{}}
	for _, f := range r.faults {
		if v.shows(f.Start, f.End) {
			tl.faults = append(tl.faults, f)
		}
	}
	labelRows := tl.placeFaultLabels()
	top := tlAxis + float64(max(labelRows, 1))*tlLabelH + 4
	markY := top
	lanesTop := markY + tlMarkRow + 6
	laneH := tlHoldH + 4 + float64(len(r.regs))*tlRegH + tlLaneGap
	for i, c := range r.clients {
		tl.laneTop[c] = lanesTop + float64(i)*laneH
	}
	tl.height = lanesTop + float64(len(r.clients))*laneH + 4
	b := &tl.b
	fmt.Fprintf(b, `<svg id="%s" class="timeline" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="ownership `+
		`timeline">`, id, tlWidth, tl.height)
	b.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" ` +
		`height="6" fill="rgba(0,0,0,0.18)"/></pattern></defs>`)

	// Lane backgrounds and names.
	for i, c := range r.clients {
		y := tl.laneTop[c]
		if i%2 == 0 {
			fmt.Fprintf(b, `<rect class="lane-bg" x="0" y="%.1f" width="%.0f" height="%.1f"/>`, y-tlLaneGap/2, tlWidth, laneH)
		}
		fmt.Fprintf(b, `<text class="lane-name" x="8" y="%.1f">%s</text>`, y+tlHoldH-5, esc(c))
		for j, reg := range r.regs {
			fmt.Fprintf(b, `<text class="reg-name" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, tlLeft-6, y+tlHoldH+4+float64(j)*tlRegH+6.5, esc(reg))
		}
	}
	fmt.Fprintf(b, `<text class="lane-name" x="8" y="%.1f">2+ holders</text>`, markY+10)
	tl.axis(top)
	tl.drawFaults(top)
	tl.waits()
	tl.holds()
	tl.overlaps(markY)
	tl.accesses()
	tl.notes()
	b.WriteString(`</svg>`)
	return b.String()
}

// axis draws ticks across the lanes, labelled with the time since the run's start.
func (tl *timeline) axis(top float64) {
	r, v, b := tl.r, tl.v, &tl.b
	step := niceStep(time.Duration(v.to-v.from), 12)
	first := time.Duration(v.from - r.start).Truncate(step)
	if first < time.Duration(v.from-r.start) {
		first += step
	}
	for d := first; r.start+int64(d) <= v.to; d += step {
		x := v.x(r.start + int64(d))
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x, x, top, tl.height)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="14" text-anchor="middle">%s</text>`, x, tickLabel(d, step))
	}
}

// placeFaultLabels assigns each fault's label a row so labels do not overlap; returns the rows used.
func (tl *timeline) placeFaultLabels() int {
	var rowEnds []float64
	labels := make([]int, len(tl.faults))
	for i, f := range tl.faults {
		x0 := tl.v.x(f.Start)
		x1 := x0 + charWidth*float64(len([]rune(nemesis.Label(f)))) + 8
		row := -1
		for j, end := range rowEnds {
			if end <= x0 {
				row = j
				break
			}
		}
		if row < 0 {
			row = len(rowEnds)
			rowEnds = append(rowEnds, 0)
		}
		rowEnds[row] = max(x1, tl.v.x(f.End)+4)
		labels[i] = row
	}
	tl.faultRows = labels
	return len(rowEnds)
}

func (tl *timeline) drawFaults(top float64) {
	r, v, b := tl.r, tl.v, &tl.b
	for i, f := range tl.faults {
		x0, x1 := v.x(f.Start), v.x(f.End)
		color := faultColor(f.Kind)
		tip := faultTip(r, f)
		ly := tlAxis + float64(tl.faultRows[i])*tlLabelH + 10
		fmt.Fprintf(b, `<g class="fault" data-kind="%s" data-tip="%s">`, esc(f.Kind), esc(tip))
		if x1-x0 < 1.5 { // an instant action (kill): a line
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="4 `+
				`2"/>`, x0, x0, ly-8, tl.height, color)
		} else {
			fmt.Fprintf(b, `<rect class="fault-band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, top, x1-x0, tl.height-top, color)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="3" fill="%s"/>`, x0, ly+2, x1-x0, color)
			if y, ok := tl.laneTop[f.Target]; ok { // the client it froze, cut off or skewed
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#hatch)" stroke="%s"/>`, x0, y-2, x1-x0, tlHoldH+4, color)
			}
		}
		fmt.Fprintf(b, `<text class="fault-label" x="%.1f" y="%.1f" fill="%s">%s</text></g>`, x0+2, ly, darken(color), esc(nemesis.Label(f)))
	}
}

func faultTip(r *run, f checker.Fault) string {
	s := fmt.Sprintf("%s\nfrom %s to %s (%s)", nemesis.Label(f), r.offset(f.Start), r.offset(f.End), checker.Human(time.Duration(f.End-f.Start)))
	if f.Point != "" {
		s += "\ntriggered at program point " + f.Point
	}
	if f.Open {
		s += "\nnot healed before the run ended"
	}
	if f.Error != "" {
		s += "\n" + f.Error
	}
	return s
}

// waits draws each acquire (with its retries) as a thin line from its start to its outcome, so
// a client starved or blocked shows as a long wait; one that gave up ends in a red tick.
func (tl *timeline) waits() {
	r, v, b := tl.r, tl.v, &tl.b
	for _, a := range r.acquires {
		y, ok := tl.laneTop[a.client]
		if !ok {
			continue
		}
		end, outcome := a.done, a.outcome
		if end == 0 {
			end, outcome = r.end, "never completed"
		}
		if !v.shows(a.invoke, end) {
			continue
		}
		x0, x1 := v.x(a.invoke), v.x(end)
		if x1-x0 < 0.5 && outcome == string(history.OK) {
			continue // an uncontended acquire: nothing to see
		}
		tip := fmt.Sprintf("%s waiting to acquire\n%s → %s "+
			"(%s)\noutcome: %s", a.client, r.offset(a.invoke), r.offset(end), checker.Human(time.Duration(end-a.invoke)), outcome)
		if a.err != "" {
			tip += "\n" + a.err
		}
		cy := y + tlHoldH/2
		fmt.Fprintf(b, `<g class="wait" data-tip="%s"><line x1="%.2f" x2="%.2f" y1="%.1f" y2="%.1f"/><rect class="wait-hit" x="%.2f" y="%.1f" `+
			`width="%.2f" height="8"/>`, esc(tip), x0, x1, cy, cy, x0, cy-4, math.Max(x1-x0, 1))
		if outcome != string(history.OK) {
			fmt.Fprintf(b, `<line class="gave-up" x1="%.2f" x2="%.2f" y1="%.1f" y2="%.1f"/>`, x1, x1, cy-5, cy+5)
		}
		b.WriteString(`</g>`)
	}
}

func (tl *timeline) holds() {
	r, v, b := tl.r, tl.v, &tl.b
	for _, h := range r.holds {
		y, ok := tl.laneTop[h.Client]
		if !ok || !v.shows(h.Start, h.End) {
			continue
		}
		x0, x1 := v.x(h.Start), v.x(h.End)
		tip := fmt.Sprintf("%s believed it held the lock\n%s → %s "+
			"(%s)", h.Client, r.offset(h.Start), r.offset(h.End), checker.Human(time.Duration(h.End-h.Start)))
		if tok, ok := r.tokenOf(h); ok {
			tip += fmt.Sprintf("\nfencing token %d", tok)
		}
		if h.Shared {
			tip += "\nshared (read) hold"
		}
		tip += "\nended by " + tl.ender(h)
		class := "hold"
		if h.Shared {
			class += " shared"
		}
		fmt.Fprintf(b, `<rect class="%s" x="%.2f" y="%.1f" width="%.2f" height="%.0f" rx="2" `+
			`data-tip="%s"/>`, class, x0, y, math.Max(x1-x0, 1), tlHoldH, esc(tip))
	}
}

func (tl *timeline) ender(h checker.Hold) string {
	switch h.EndedBy {
	case history.Release:
		return "its release"
	case history.Lost:
		return "noticing it lost the lock"
	case history.Crash:
		return "its death"
	case history.Kill:
		return "a kill"
	case "":
		return "the end of the run"
	}
	return h.EndedBy
}

// overlaps marks each window in which two clients both believed they held the lock: on both
// lanes, and in the summary row above them.
func (tl *timeline) overlaps(markY float64) {
	r, v, b := tl.r, tl.v, &tl.b
	for _, w := range r.judged.Verdict.MutualExclusion.Windows {
		if !v.shows(w.Start, w.Start+int64(w.Length)) {
			continue
		}
		x0 := v.x(w.Start)
		x1 := v.x(w.Start + int64(w.Length))
		width := math.Max(x1-x0, 2)
		tip := fmt.Sprintf("DOUBLE OWNERSHIP\n%s and %s both believed they held the lock\n%s → %s (%s)",
			w.Clients[0], w.Clients[1], r.offset(w.Start), r.offset(w.Start+int64(w.Length)), checker.Human(w.Length))
		if w.Class != "" {
			tip += "\n" + strings.ToUpper(string(w.Class)) + ": " + w.Why
		}
		class := strings.TrimSpace(" " + string(w.Class))
		fmt.Fprintf(b, `<rect class="overlap-mark %s" x="%.2f" y="%.1f" width="%.2f" height="%.0f" data-tip="%s"/>`, class, x0, markY+1, width,
			tlMarkRow-2, esc(tip))
		for _, c := range w.Clients {
			if y, ok := tl.laneTop[c]; ok {
				fmt.Fprintf(b, `<rect class="overlap %s" x="%.2f" y="%.1f" width="%.2f" height="%.0f" data-tip="%s"/>`, class, x0, y-1, width,
					tlHoldH+2, esc(tip))
			}
		}
	}
}

// accesses marks every read (circle) and write (square) on each register's row: green accepted,
// red rejected by fencing, grey unknown.
func (tl *timeline) accesses() {
	r, view, b := tl.r, tl.v, &tl.b
	for _, a := range r.accesses {
		y, ok := tl.laneTop[a.client]
		if !ok || !view.shows(a.t, a.t) {
			continue
		}
		x := view.x(a.t)
		for j, reg := range r.regs {
			v, ok := a.register(reg)
			if !ok {
				continue
			}
			status := statusClass(v.Status)
			cy := y + tlHoldH + 4 + float64(j)*tlRegH + 4
			tip := fmt.Sprintf("%s %s %s (critical section %d)\nat %s", a.client, a.f, reg, a.cs, r.offset(a.t))
			if a.f == history.Read {
				tip += fmt.Sprintf(", read %d", v.Value)
			} else {
				tip += fmt.Sprintf(", wrote %d", v.Value)
			}
			if a.token != nil {
				tip += fmt.Sprintf("\ntoken %d", *a.token)
			}
			tip += "\n" + map[string]string{"accepted": "accepted", "rejected": "REJECTED by fencing (stale token)", "unknown": "outcome unknown"}[status]
			if a.f == history.Read {
				fmt.Fprintf(b, `<circle class="acc %s" data-reg="%s" cx="%.2f" cy="%.1f" r="3" data-tip="%s"/>`, status, esc(reg), x, cy, esc(tip))
			} else {
				fmt.Fprintf(b, `<rect class="acc %s" data-reg="%s" x="%.2f" y="%.1f" width="6" height="6" data-tip="%s"/>`, status, esc(reg), x-3, cy-3, esc(tip))
			}
		}
	}
}

func statusClass(s string) string {
	switch s {
	case history.Accepted:
		return "accepted"
	case history.Rejected:
		return "rejected"
	}
	return "unknown"
}

// notes marks a client noticing it lost the lock, and a client's death.
func (tl *timeline) notes() {
	r, v, b := tl.r, tl.v, &tl.b
	for _, e := range r.marks {
		c := e.Client
		y, ok := tl.laneTop[c]
		if !ok || !v.shows(e.Time, e.Time) {
			continue
		}
		x := v.x(e.Time)
		if e.Kind == history.Crash {
			tip := fmt.Sprintf("%s died at %s", c, r.offset(e.Time))
			if e.Error != "" {
				tip += "\n" + e.Error
			}
			fmt.Fprintf(b, `<path class="note crash" d="M%.1f %.1f l8 8 m0 -8 l-8 8" data-tip="%s"/>`, x-4, y+tlHoldH/2-4, esc(tip))
			continue
		}
		tip := fmt.Sprintf("%s noticed it no longer holds the lock, at %s", c, r.offset(e.Time))
		if e.Error != "" {
			tip += "\n" + e.Error
		}
		fmt.Fprintf(b, `<path class="note lost" d="M%.1f %.1f l5 -7 h-10 z" data-tip="%s"/>`, x, y+1, esc(tip))
	}
}

// niceStep picks a tick step (1, 2 or 5 times a power of ten) giving at most about n ticks.
func niceStep(span time.Duration, n int) time.Duration {
	if span <= 0 {
		return time.Second
	}
	raw := float64(span) / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return time.Duration(m * p)
		}
	}
	return time.Duration(10 * p)
}

func tickLabel(d, step time.Duration) string {
	if step >= time.Second {
		return fmt.Sprintf("%.0fs", d.Seconds())
	}
	if step >= 100*time.Millisecond {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// darken makes a fault colour readable as text.
func darken(hex string) string {
	var r, g, bl int
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &bl); err != nil {
		return hex
	}
	return fmt.Sprintf("#%02x%02x%02x", r*7/10, g*7/10, bl*7/10)
}

func esc(s string) string { return html.EscapeString(s) }
