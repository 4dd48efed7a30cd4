package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	_ "github.com/lockcheck/lockcheck/report/plots" // the browser sees the plots lockcheck draws

	"github.com/lockcheck/lockcheck/history/synth"
	"github.com/lockcheck/lockcheck/report"
	"github.com/lockcheck/lockcheck/runner"
)

// ScreenshotFile is where the browser test leaves its picture of the page, in the run folder.
const screenshotFile = "report-screenshot.png"

// A real run's report.html, opened offline in headless Chromium (Debian's package, which
// scripts/install-deps.sh installs): the timeline and both plots must have rendered, the pause
// must show as a double-ownership window, hovering must give details, and the page must raise
// no script error. The screenshot stays in the run folder.
func TestReportRendersInHeadlessChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (make test installs it through scripts/install-deps.sh): %v", err)
	}
	r := mustRuns(t)
	dir, err := filepath.Abs(r.pause.Dir)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, report.ReportFile)

	step, scriptErrors := openInChromium(t, chromium, page)
	rendered, err := chromedp.Run(step, chromedp.Evaluate[string](`document.body.getAttribute("data-rendered") || ""`))
	if err != nil {
		t.Fatal(err)
	}
	var counts struct{ Holds, Overlaps, Faults, Accesses, Plots int }
	if err := json.Unmarshal([]byte(rendered), &counts); err != nil {
		t.Fatalf("the page's script did not report what rendered (%q): %v", rendered, err)
	}
	if counts.Holds == 0 || counts.Accesses == 0 || counts.Faults == 0 {
		t.Errorf("timeline incomplete: %+v", counts)
	}
	if counts.Overlaps == 0 {
		t.Errorf("the pause scenario's double ownership is not marked: %+v", counts)
	}
	if counts.Plots != 2 {
		t.Errorf("want 2 plots, got %d", counts.Plots)
	}
	// The plots drew something: gonum's SVG has paths (axes, points, lines) and text.
	for _, id := range []string{"plot-latency", "plot-throughput"} {
		n, err := chromedp.Run(step, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll("#%s path").length`, id)))
		if err != nil || n < 10 {
			t.Errorf("plot %s has %d paths (%v)", id, n, err)
		}
		w, err := chromedp.Run(step, chromedp.Evaluate[float64](fmt.Sprintf(`document.getElementById("%s").getBoundingClientRect().width`, id)))
		if err != nil || w < 400 {
			t.Errorf("plot %s is %v px wide (%v)", id, w, err)
		}
	}
	// Hover details: the tooltip shows a double-ownership window's clients.
	tip, err := chromedp.Run(step, chromedp.Evaluate[string](`(function () {
		var el = document.querySelector("#timeline .overlap");
		el.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
		return document.getElementById("tip").textContent;
	})()`))
	if err != nil || !strings.Contains(tip, "both believed they held the lock") {
		t.Errorf("hovering a double-ownership window shows %q (%v)", tip, err)
	}
	// The verdict in words at the top.
	headline, err := chromedp.Run(step, chromedp.Evaluate[string](`document.querySelector(".headline").textContent`))
	if err != nil || !strings.Contains(headline, "two clients believed they held the lock at the same time") ||
		!strings.Contains(headline, "a holder outlived its promise") {
		t.Errorf("headline %q (%v)", headline, err)
	}
	// Put the tooltip away before the picture.
	if _, err := chromedp.Run(step, chromedp.Evaluate[bool](`document.getElementById("tip").style.display = "none", true`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(step, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(dir, screenshotFile)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	if errs := scriptErrors(); len(errs) > 0 {
		t.Errorf("script errors on the page:\n%s", strings.Join(errs, "\n"))
	}
}

// openInChromium opens page in a headless Chromium for the rest of the test; the function it
// returns lists the script errors seen so far.
func openInChromium(t *testing.T, chromium, page string) (context.Context, func() []string) {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("hide-scrollbars", true))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)

	var mu sync.Mutex
	var scriptErrors []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			scriptErrors = append(scriptErrors, "exception: "+describeException(ev.ExceptionDetails))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				scriptErrors = append(scriptErrors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step, cancelStep := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelStep)
	if err := chromedp.Do(step, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	return step, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), scriptErrors...)
	}
}

func describeException(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "?"
	}
	s := d.Text
	if d.Exception != nil {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (line %d)", s, d.LineNumber)
}

// A soak-length run (a generated history of a million events: 4 clients for about 27 minutes,
// with pauses, a few windows of double ownership and an early write of unknown outcome), judged
// as `lockcheck check` judges it, opened in headless Chromium: the page stays small, the
// overview draws the whole run with every double ownership and fault marked, the detail windows
// are drawn in full, zooming into the overview draws single holds with their details, and the
// page raises no script error. The time the page took to load is logged (a figure, not a test).
func TestLongRunReportInHeadlessChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (make test installs it through scripts/install-deps.sh): %v", err)
	}
	dir := filepath.Join(resultsRoot, "long-run")
	st, err := synth.WriteRun(dir, synth.Options{Events: 1_000_000, Pauses: 60, DoubleOwnership: 5, UnknownAt: 0.02, UnknownLanded: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Judge(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.ReportError != nil {
		t.Fatal(res.ReportError)
	}
	page := filepath.Join(dir, report.ReportFile)
	info, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d holds: report.html is %.1f MB", st.Events, st.Cycles, float64(info.Size())/(1<<20))
	if info.Size() > 10<<20 {
		t.Errorf("report.html of a long run is %d bytes, over 10 MB", info.Size())
	}

	began := time.Now()
	step, scriptErrors := openInChromium(t, chromium, page)
	rendered, err := chromedp.Run(step, chromedp.Evaluate[string](`document.body.getAttribute("data-rendered") || ""`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page loaded and drew in %s", time.Since(began).Round(time.Millisecond))
	var got struct {
		Holds, Overlaps, Accesses, Windows, Plots int
		Overview                                  struct {
			Counts struct{ Holds, Overlaps, Faults, Windows int }
			Drawn  struct {
				Holds, Overlaps, Faults int
				Single                  bool
			}
		}
	}
	if err := json.Unmarshal([]byte(rendered), &got); err != nil {
		t.Fatalf("the page's script did not report what rendered (%q): %v", rendered, err)
	}
	ov := got.Overview
	if ov.Counts.Holds != st.Cycles || ov.Counts.Overlaps != len(res.Verdict.MutualExclusion.Windows) || ov.Counts.Faults != 60 {
		t.Errorf("the overview's data lacks something: %+v (want %d holds, %d overlaps, 60 "+
			"faults)", ov.Counts, st.Cycles, len(res.Verdict.MutualExclusion.Windows))
	}
	if ov.Drawn.Single || ov.Drawn.Overlaps != ov.Counts.Overlaps || ov.Drawn.Faults != ov.Counts.Faults || ov.Counts.Overlaps == 0 {
		t.Errorf("the whole run's overview must mark every overlap and fault, holds as shares of time: %+v", ov)
	}
	if got.Windows == 0 || got.Windows != ov.Counts.Windows || got.Holds == 0 || got.Accesses == 0 || got.Overlaps == 0 || got.Plots != 2 {
		t.Errorf("detail windows or plots missing: %+v", got)
	}
	// Hovering a double ownership in the overview names the clients.
	tip, err := chromedp.Run(step, chromedp.Evaluate[string](`(function () {
		var el = document.querySelector("#overview .overlap-mark");
		el.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
		return document.getElementById("tip").textContent;
	})()`))
	if err != nil || !strings.Contains(tip, "DOUBLE OWNERSHIP") {
		t.Errorf("hovering an overlap in the overview shows %q (%v)", tip, err)
	}
	if _, err := chromedp.Run(step, chromedp.Evaluate[bool](`document.getElementById("tip").style.display = "none", true`)); err != nil {
		t.Fatal(err)
	}
	if png, err := chromedp.Run(step, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(dir, screenshotFile), png, 0o644)
	}
	// Zoom into the first double ownership: the holds are drawn one by one, with details.
	first := res.Verdict.MutualExclusion.Windows[0]
	from := float64(first.Offset)/1e9 - 0.5
	zoomed, err := chromedp.Run(step, chromedp.Evaluate[string](fmt.Sprintf(`JSON.stringify(window.lockcheckZoom(%f, %f))`, from, from+1.5)))
	if err != nil {
		t.Fatal(err)
	}
	var z struct {
		Holds, Overlaps int
		Single          bool
	}
	if err := json.Unmarshal([]byte(zoomed), &z); err != nil || !z.Single || z.Holds == 0 || z.Overlaps != 1 {
		t.Errorf("zoomed into 1.5 s around a double ownership: %s (%v)", zoomed, err)
	}
	tip, err = chromedp.Run(step, chromedp.Evaluate[string](`(function () {
		var el = document.querySelector("#overview .hold");
		el.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
		return document.getElementById("tip").textContent;
	})()`))
	if err != nil || !strings.Contains(tip, "believed it held the lock") {
		t.Errorf("hovering a hold in the zoomed overview shows %q (%v)", tip, err)
	}
	if errs := scriptErrors(); len(errs) > 0 {
		t.Errorf("script errors on the page:\n%s", strings.Join(errs, "\n"))
	}
}
