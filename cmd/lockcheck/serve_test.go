package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// As a user would: a real run writes report.html and shows progress on stderr, `report`
// writes the page again, and `serve --port 0` lists the run on 127.0.0.1 until Ctrl-C.
func TestReportAndServeCommands(t *testing.T) {
	bin := lockcheck(t)
	repo, _ := filepath.Abs("../..")
	results := t.TempDir()

	src, err := os.ReadFile(filepath.Join(repo, "scenarios/no-faults-set-nx-px.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(t.TempDir(), "no-faults-set-nx-px.yaml")
	os.WriteFile(scenario, []byte(strings.Replace(string(src), "duration: 4s", "duration: 1s", 1)), 0o644)
	run := exec.Command(bin, "run", "--results", results, scenario)
	run.Dir = repo
	var stderr strings.Builder
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "no report.html") {
		t.Fatalf("the run wrote no report: %s", stderr.String())
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(runDir, "report.html")
	if err := os.Remove(page); err != nil {
		t.Fatalf("run left no report.html: %v", err)
	}
	if out, err := exec.Command(bin, "report", runDir).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if _, err := os.Stat(page); err != nil {
		t.Fatalf("report did not write the page again: %v", err)
	}
	if out, err := exec.Command(bin, "report", t.TempDir()).CombinedOutput(); exitCode(err) != exitHarness {
		t.Errorf("report of an empty folder: exit %d\n%s", exitCode(err), out)
	}

	serve := exec.Command(bin, "serve", "--port", "0", "--results", results)
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer serve.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no URL: %v", err)
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if url == "" {
		t.Fatalf("serve's URL is not on 127.0.0.1: %q", line)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "no-faults-set-nx-px") || !strings.Contains(string(body), "report.html") {
		t.Fatalf("GET %s = %d:\n%s", url, resp.StatusCode, body)
	}
	serve.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	select {
	case err := <-done:
		if exitCode(err) != 0 {
			t.Errorf("serve stopped by Ctrl-C: exit %d", exitCode(err))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on Ctrl-C")
	}
}
