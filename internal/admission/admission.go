// Package admission admits jobs while the machine has CPU to spare. A matrix cell mostly waits
// (holds, think times, leases), so a fixed number side by side either leaves two cores idle or,
// when many cells start JVMs at once, starves the runs whose verdicts hang on being scheduled in
// time. A Gate starts a job when the cores were less busy than a bound over the last second, once
// the previous start's own start-up is over and shows in the samples (it said it was ready a
// sample ago, or a spacing has passed since it started), and never more than a cap at once.
package admission

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Gate admits jobs. Its zero value is not usable: New makes one.
type Gate struct {
	max     int           // jobs at once, at most
	busy    float64       // the share of all cores busy (0–1) above which nothing new starts
	spacing time.Duration // between two starts, at least
	read    func() (Sample, error)

	mu       sync.Mutex
	running  int
	peak     int
	last     time.Time // the latest start
	seq      int       // the latest start's number
	readyAt  time.Time // when the latest start said it was ready; zero while it starts
	samples  []Sample  // the last second's, oldest first
	stop     chan struct{}
	sampling bool
}

// Sample is the machine's CPU counters at a moment (/proc/stat's first line, in ticks).
type Sample struct {
	At         time.Time
	Busy, Idle uint64
}

// Defaults, measured on 2 cores (docs/MATRIX.md): at 70 % busy the default grid ran eight to
// twelve cells at once, and its cells' statuses stayed within what fixed settings had shown (at
// 60 % the grid's cells were held back by the JVMs' starts while a core was a third idle). A job
// that never says it is ready (it failed first) holds the next start back DefaultSpacing at most.
const (
	DefaultBusy    = 0.7
	DefaultSpacing = time.Second
	window         = time.Second
	every          = 200 * time.Millisecond
)

// Job is one admitted job; its zero value (no gate) does nothing.
type Job struct {
	g   *Gate
	seq int
}

// Ready says the job's start-up is over (its servers and clients are up): the next job may
// start a sample later instead of a spacing later, if the cores allow. Safe to call more than
// once and from any goroutine.
func (j Job) Ready() {
	if j.g == nil {
		return
	}
	j.g.mu.Lock()
	defer j.g.mu.Unlock()
	if j.seq == j.g.seq && j.g.readyAt.IsZero() {
		j.g.readyAt = time.Now()
	}
}

// Done says the job has ended.
func (j Job) Done() {
	if j.g == nil {
		return
	}
	j.Ready()
	j.g.mu.Lock()
	j.g.running--
	j.g.mu.Unlock()
}

// New makes a gate of at most max jobs at once.
func New(max int) *Gate {
	return &Gate{max: max, busy: DefaultBusy, spacing: DefaultSpacing, read: ReadProcStat}
}

// Wait blocks until a job may start (or ctx ends), and counts it as running: call the Job's
// Ready when its start-up is over and Done when it ends. The first job starts at once, as does
// any job when none runs.
func (g *Gate) Wait(ctx context.Context) (Job, error) {
	g.startSampling()
	for {
		g.mu.Lock()
		now := time.Now()
		if Admit(g.running, g.max, g.startedUp(now), busyShare(g.samples), g.busy) {
			g.running++
			g.peak = max(g.peak, g.running)
			g.last, g.readyAt = now, time.Time{}
			g.seq++
			j := Job{g, g.seq}
			g.mu.Unlock()
			return j, nil
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return Job{}, ctx.Err()
		case <-time.After(every / 4):
		}
	}
}

// startedUp reports whether the latest start's start-up shows in the samples: it said it was
// ready at least a sample ago, or it started a spacing ago. Under g.mu.
func (g *Gate) startedUp(now time.Time) bool {
	return now.Sub(g.last) >= g.spacing || (!g.readyAt.IsZero() && now.Sub(g.readyAt) >= every)
}

// Peak is the most jobs that ran at once.
func (g *Gate) Peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

// Close stops sampling.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sampling {
		close(g.stop)
		g.sampling = false
	}
}

// Admit is the rule: a job starts when none runs, or when fewer than max run, the previous
// start's start-up shows in the samples (startedUp), and the cores were busy less than bound
// (busy < 0: not known, which admits nothing beyond the first job).
func Admit(running, max int, startedUp bool, busy, bound float64) bool {
	switch {
	case running == 0:
		return true
	case running >= max || !startedUp:
		return false
	default:
		return busy >= 0 && busy < bound
	}
}

// busyShare is the share of the cores busy between the oldest and the newest sample, or -1
// with fewer than two.
func busyShare(s []Sample) float64 {
	if len(s) < 2 {
		return -1
	}
	first, last := s[0], s[len(s)-1]
	busy, idle := last.Busy-first.Busy, last.Idle-first.Idle
	if busy+idle == 0 {
		return -1
	}
	return float64(busy) / float64(busy+idle)
}

func (g *Gate) startSampling() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sampling {
		return
	}
	g.sampling, g.stop = true, make(chan struct{})
	stop := g.stop
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if s, err := g.read(); err == nil {
				g.mu.Lock()
				g.samples = append(g.samples, s)
				for len(g.samples) > 2 && s.At.Sub(g.samples[1].At) >= window {
					g.samples = g.samples[1:]
				}
				g.mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
}

// ReadProcStat reads the machine's CPU counters from /proc/stat.
func ReadProcStat() (Sample, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return Sample{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return Sample{}, err
	}
	s, err := ParseCPULine(line)
	s.At = time.Now()
	return s, err
}

// ParseCPULine reads /proc/stat's aggregate line: "cpu user nice system idle iowait irq softirq
// steal ...". Idle and iowait are idle; the rest up to steal is busy (guest time is counted in
// user already).
func ParseCPULine(line string) (Sample, error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return Sample{}, fmt.Errorf("/proc/stat: not the aggregate cpu line: %q", strings.TrimSpace(line))
	}
	var s Sample
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return Sample{}, errors.New("/proc/stat: cpu field " + strconv.Itoa(i+1) + " is not a number: " + f)
		}
		if i == 3 || i == 4 { // idle, iowait
			s.Idle += n
		} else {
			s.Busy += n
		}
	}
	return s, nil
}
