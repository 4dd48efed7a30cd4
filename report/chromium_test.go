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

	"github.com/lockcheck/lockcheck/report"
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

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("hide-scrollbars", true))...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

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
	step, cancelStep := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStep()
	if err := chromedp.Do(step, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}

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
	if err != nil || !strings.Contains(headline, "Unsafe") {
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

	mu.Lock()
	defer mu.Unlock()
	if len(scriptErrors) > 0 {
		t.Errorf("script errors on the page:\n%s", strings.Join(scriptErrors, "\n"))
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
