package report_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/report"
)

// The results browser, over HTTP, on a folder of real runs: it lists them newest first with
// scenario, lock, faults and verdict colour, links their reports, lists matrices, serves the
// files, and refuses writes and paths leading out of the folder.
func TestBrowseServesAFolderOfRealRuns(t *testing.T) {
	r := mustRuns(t)
	root := resultsRoot
	// A matrix folder as `lockcheck matrix` leaves it.
	matrixDir := filepath.Join(root, "matrix", "20261122T010203.000")
	if err := os.MkdirAll(matrixDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(matrixDir, report.MatrixFile), []byte("<h1>matrix</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symlink pointing out of the folder must not be followed.
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(root, "escape"))

	h, err := report.Browse(root)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = path // sent as written: no client-side cleaning of ".."
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}

	code, ctype, index := get("/")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") {
		t.Fatalf("GET / = %d %s", code, ctype)
	}
	pauseRel := rel(t, root, r.pause.Dir)
	controlRel := rel(t, root, r.control.Dir)
	pauseAt := strings.Index(index, `data-path="`+pauseRel+`"`)
	controlAt := strings.Index(index, `data-path="`+controlRel+`"`)
	if pauseAt < 0 || controlAt < 0 {
		t.Fatalf("the index lacks a run (%s at %d, %s at %d):\n%s", pauseRel, pauseAt, controlRel, controlAt, index)
	}
	if controlAt > pauseAt {
		t.Errorf("runs not newest first: the control (made second) is listed after the pause run")
	}
	// The colour follows verdict.json: a run that did not reach its expected verdict stands out
	// whatever it was; otherwise red for violated mutual exclusion, green for held.
	colour := func(matches, holds bool) string {
		switch {
		case !matches:
			return `class="run mismatch"`
		case !holds:
			return `class="run unsafe"`
		}
		return `class="run safe"`
	}
	pauseRow := row(index, pauseAt)
	for _, want := range []string{colour(r.pause.Matches, r.pause.Verdict.MutualExclusion.Holds), "k2-set-nx-px", "set-nx-px", "pause",
		pauseRel + "/report.html"} {
		if !strings.Contains(pauseRow, want) {
			t.Errorf("the pause run's row lacks %q:\n%s", want, pauseRow)
		}
	}
	controlRow := row(index, controlAt)
	for _, want := range []string{colour(r.control.Matches, r.control.Verdict.MutualExclusion.Holds), "no-faults-set-nx-px", "none"} {
		if !strings.Contains(controlRow, want) {
			t.Errorf("the control run's row lacks %q:\n%s", want, controlRow)
		}
	}
	if !strings.Contains(index, `href="matrix/20261122T010203.000/matrix.html"`) {
		t.Errorf("the index does not link the matrix:\n%s", index)
	}

	// The linked report and the run's files are served.
	if code, ctype, body := get("/" + pauseRel + "/report.html"); code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") ||
		!strings.Contains(body, `id="timeline"`) {
		t.Errorf("report.html: %d %s", code, ctype)
	}
	if code, _, body := get("/" + pauseRel + "/verdict.json"); code != http.StatusOK || !strings.Contains(body, `"matches_expect"`) {
		t.Errorf("verdict.json: %d", code)
	}
	// Porcupine's view, linked from the report, carries the pause as an annotation.
	if code, _, body := get("/" + pauseRel + "/linearizability-unfenced.html"); code != http.StatusOK || !strings.Contains(body, "nemesis client-1") {
		t.Errorf("linearizability-unfenced.html: %d, annotated with the pause: %v", code, strings.Contains(body, "nemesis client-1"))
	}
	if code, _, body := get("/matrix/20261122T010203.000/matrix.html"); code != http.StatusOK || !strings.Contains(body, "matrix") {
		t.Errorf("matrix.html: %d", code)
	}

	// Nothing outside the folder.
	for _, path := range []string{"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/escape/secret.txt"} {
		if code, _, body := get(path); code == http.StatusOK || strings.Contains(body, "root:") || strings.Contains(body, "secret") {
			t.Errorf("GET %s escaped the results folder: %d %q", path, code, body)
		}
	}
	// Read-only.
	resp, err := srv.Client().Post(srv.URL+"/"+pauseRel+"/verdict.json", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", resp.StatusCode)
	}
}

func rel(t *testing.T, root, dir string) string {
	t.Helper()
	r, err := filepath.Rel(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(r)
}

// row is the table row of the index around position i.
func row(index string, i int) string {
	start := max(strings.LastIndex(index[:i], "<tr"), 0)
	end := strings.Index(index[i:], "</tr>")
	if end < 0 {
		return index[start:]
	}
	return index[start : i+end]
}
