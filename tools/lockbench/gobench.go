package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// benchSet is what one `go test -bench` run printed: for each benchmark (GOMAXPROCS suffix
// dropped), one map of unit → value per -count round, in order.
type benchSet struct {
	raw     string // file with the raw output, if kept
	command string
	rounds  map[string][]map[string]float64
}

// samples are the values of unit over the rounds of benchmark name.
func (s benchSet) samples(name, unit string) []float64 {
	var out []float64
	for _, r := range s.rounds[name] {
		if v, ok := r[unit]; ok {
			out = append(out, v)
		}
	}
	return out
}

// rawDir is where runGoBench keeps each run's raw output ("" = nowhere).
var rawDir string

// runGoBench runs the benchmarks matching pattern in pkgs, one package at a time (-p 1: their
// figures must not disturb each other), and parses what they print.
func runGoBench(pattern, benchtime string, count int, pkgs ...string) (benchSet, error) {
	args := append([]string{"test", "-p", "1", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime", benchtime,
		"-count", strconv.Itoa(count), "-timeout", "20m"}, pkgs...)
	set := benchSet{command: "go " + shellJoin(args), rounds: map[string][]map[string]float64{}}
	cmd := exec.Command("go", args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	parseBench(&set, out.Bytes())
	if rawDir != "" {
		var names []string
		for _, pkg := range pkgs {
			names = append(names, strings.Trim(strings.ReplaceAll(pkg, "/", "-"), ".-"))
		}
		name := strings.Join(names, "+") + ".txt"
		if werr := os.WriteFile(filepath.Join(rawDir, name), out.Bytes(), 0o644); werr == nil {
			set.raw = filepath.Join(rawDir, name)
		}
	}
	if err != nil {
		return set, fmt.Errorf("%s: %w\n%s", set.command, err, tail(out.String(), 3000))
	}
	if len(set.rounds) == 0 {
		return set, fmt.Errorf("%s printed no benchmark results:\n%s", set.command, tail(out.String(), 3000))
	}
	return set, nil
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads lines such as
// "BenchmarkLockCycle/design=zk/clients=1-2  69  3276732 ns/op  0 busy/cycle  305.2 cycles/s".
// Go prints a benchmark's name before running it and its figures after, so a log line written
// while it runs can split the two: a name alone on its line waits for the figures' line.
func parseBench(set *benchSet, out []byte) {
	lines := bufio.NewScanner(bytes.NewReader(out))
	pending := ""
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 0 {
			continue
		}
		name := ""
		if strings.HasPrefix(f[0], "Benchmark") {
			name, f = procSuffix.ReplaceAllString(f[0], ""), f[1:]
			pending = name
		} else if pending != "" {
			name = pending
		}
		if name == "" || len(f) < 3 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		m := map[string]float64{}
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			m[f[i+1]] = v
		}
		if len(m) > 0 {
			set.rounds[name] = append(set.rounds[name], m)
			pending = ""
		}
	}
}

func shellJoin(args []string) string {
	var out []string
	for _, a := range args {
		if strings.ContainsAny(a, " ^$|*()'") {
			a = "'" + a + "'"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
