package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// report is BENCH.md: a header naming the machine, one section per figure, and the total time.
type report struct {
	c        config
	began    time.Time
	machine  string
	loadFrom string
	sections map[int]string
	took     map[int]time.Duration
}

func newReport(c config, began time.Time) *report {
	return &report{c: c, began: began, machine: machine(), loadFrom: loadavg(),
		sections: map[int]string{}, took: map[int]time.Duration{}}
}

func (r *report) set(n int, text string, took time.Duration) {
	r.sections[n], r.took[n] = text, took
}

func (r *report) write(total time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# lockcheck benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`%s`), started %s.\n\n",
		strings.TrimSpace("lockbench "+strings.Join(os.Args[1:], " ")), r.began.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "**Machine:** %s. Load average (1/5/15 min) at the start: %s; at the end: %s.\n\n", r.machine, r.loadFrom, loadavg())
	fmt.Fprintf(&b, "Figures are `median (min–max)` over the n repeated runs each table states. The machine may be shared"+
		" and its speed drifts, so read the ratios (measured side by side in the same rounds) before the absolute rates.\n\n")
	for n := 1; n <= len(titles); n++ {
		text, ok := r.sections[n]
		if !ok {
			fmt.Fprintf(&b, "## %d. %s\n\nNot measured yet.\n\n", n, titles[n])
			continue
		}
		b.WriteString(strings.TrimRight(text, "\n"))
		if t := r.took[n]; t > 0 {
			fmt.Fprintf(&b, "\n\n_Measuring this took %s._", t.Round(time.Second))
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "---\nTotal time of `lockbench`: %s.\n", total.Round(time.Second))
	if err := os.MkdirAll(filepath.Dir(r.c.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(r.c.out, []byte(b.String()), 0o644)
}

// machine describes the cores, memory, CPU and software the figures were taken on.
func machine() string {
	cpu := firstField("/proc/cpuinfo", "model name")
	mem := firstField("/proc/meminfo", "MemTotal")
	var memText string
	var kb int64
	if _, err := fmt.Sscanf(mem, "%d kB", &kb); err == nil {
		memText = fmt.Sprintf("%.1f GiB memory", float64(kb)/(1<<20))
	}
	redis := "redis-server ?"
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		f := strings.Fields(string(out))
		for _, w := range f {
			if strings.HasPrefix(w, "v=") {
				redis = "Redis " + strings.TrimPrefix(w, "v=")
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d cores (%s), %s, Linux %s, %s, %s", runtime.NumCPU(), cpu, memText,
		strings.TrimSpace(string(kernel)), runtime.Version(), redis)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " / ")
}

// firstField is the value of the first "key: value" line of a /proc file.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
