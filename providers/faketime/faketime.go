// Package faketime gives a server a wall clock the harness can set while it runs (K7, K8): the
// server runs under libfaketime, which replaces gettimeofday/clock_gettime/time in the process and
// reads the fake clock's setting from a timestamp file. Redis expires keys by its wall clock, so a
// clock set ahead expires leases early and a clock set back keeps them alive longer. Every
// provider that runs servers itself (local processes, containers) uses it the same way.
//
// How libfaketime 0.9.10 (Debian) behaves, measured on this machine:
//   - the file holds "+S x R" (S seconds, fractions with '.' in the C locale that Redis keeps;
//     R the rate); with an offset the fake time is start + (now - start)*R + S, where start is
//     when libfaketime initialised in the process. A rate is kept until another "x" is read, so
//     every setting written names its rate, and the offset is computed so the clock does not
//     jump when the rate changes (see setting.spec).
//   - the file is re-read when a time call finds the cached setting older than
//     FAKETIME_CACHE_DURATION whole seconds. With 1 a change shows after 1–2 s and a setting that
//     lasts less than that can be missed entirely; with 0 it is re-read at most once a second, so a
//     change shows within 0–1 s (measured with Redis: a PX 5000 key is gone 0.05–0.73 s after the
//     file says +10 s, against 1.04–1.60 s with 1).
//   - rate also scales the process's sleeps and epoll_wait timeouts (Redis's timers run at R).
//   - Go programs ignore it (they make system calls directly): a Go client's clock is skewed
//     through its own clock (package clock) instead.
package faketime

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Where Debian puts the libraries (package libfaketime; libc_malloc_debug comes with libc6 2.34+),
// on the host and in the project's container images alike. Variables so tests can pretend
// libfaketime is missing.
var (
	Lib            = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
	MallocDebugLib = "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
)

// FileName is the timestamp file's name in a node's folder.
const FileName = "faketime"

// cacheDuration: re-read the file at most once a second (see the package note).
const cacheDuration = "0"

// Check reports whether servers can run under libfaketime here, with the Debian package to install
// when they cannot.
func Check() error {
	var errs []error
	if _, err := os.Stat(Lib); err != nil {
		errs = append(errs, fmt.Errorf("%s not found: install the Debian package libfaketime (apt-get install -y libfaketime)", Lib))
	}
	// Without it redis-server deadlocks at start under libfaketime (jemalloc vs libfaketime).
	if _, err := os.Stat(MallocDebugLib); err != nil {
		errs = append(errs, fmt.Errorf("%s not found (needed next to libfaketime for redis-server): it comes with the Debian package libc6, glibc "+
			"2.34 or newer", MallocDebugLib))
	}
	return errors.Join(errs...)
}

// Env is the environment that puts a process under libfaketime, reading the timestamp file at
// path (as the process sees it). FAKETIME_DONT_FAKE_MONOTONIC: a faked CLOCK_MONOTONIC that steps
// back stalls Redis's expiry cycle. libc_malloc_debug: without it redis-server deadlocks at start.
func Env(path string) []string {
	return []string{
		"LD_PRELOAD=" + Lib + " " + MallocDebugLib,
		"FAKETIME_TIMESTAMP_FILE=" + path,
		"FAKETIME_CACHE_DURATION=" + cacheDuration,
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// Clock is one node's settable clock: its timestamp file and what was last asked of it. The
// setting belongs to the node, as a machine's clock would, and survives restarts.
type Clock struct {
	path string // the timestamp file, as the harness sees it

	mu        sync.Mutex
	setting   setting
	procStart time.Time // when the current process started (libfaketime's start time)
}

// New creates the timestamp file at path with the true clock.
func New(path string) (*Clock, error) {
	c := &Clock{path: path}
	if err := writeFileAtomic(path, setting{}.spec(time.Now())); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	return c, nil
}

// Path is the timestamp file.
func (c *Clock) Path() string { return c.path }

// Starting rewrites the file for a process about to start now, so the clock carries on where it
// would be (libfaketime takes its start time a few milliseconds later, which shifts a clock
// running at rate R by times that).
func (c *Clock) Starting() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	if err := writeFileAtomic(c.path, c.setting.spec(start)); err != nil {
		return fmt.Errorf("clock file: %w", err)
	}
	c.procStart = start
	return nil
}

// Set sets the clock to real time + offset, running at rate from now on (0 or 1: true speed). The
// process picks the change up within about a second (libfaketime re-reads the file at most once a
// second); a paused process picks it up when resumed.
func (c *Clock) Set(offset time.Duration, rate float64) error {
	if rate == 0 {
		rate = 1
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("clock rate %v: want a positive finite rate (0 or 1: true speed)", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := setting{set: true, anchor: time.Now(), offset: offset, rate: rate}
	if err := writeFileAtomic(c.path, s.spec(c.procStart)); err != nil {
		return fmt.Errorf("set clock: %w", err)
	}
	c.setting = s
	return nil
}

// setting is what Set asked for: from anchor (real time) on, the clock reads real time + offset at
// anchor and runs at rate. The zero value is the true clock.
type setting struct {
	set    bool
	anchor time.Time
	offset time.Duration
	rate   float64
}

// spec is the timestamp file's content for a process whose libfaketime started at start.
// libfaketime computes start + (t-start)*rate + O; we want anchor + offset + (t-anchor)*rate,
// so O = offset + (anchor-start)*(1-rate).
func (s setting) spec(start time.Time) string {
	if !s.set {
		return "+0\n"
	}
	o := s.offset.Seconds() + s.anchor.Sub(start).Seconds()*(1-s.rate)
	str := strconv.FormatFloat(o, 'f', 6, 64)
	if o >= 0 {
		str = "+" + str
	}
	// 'f' never writes an exponent: libfaketime reads "1e-05" as 1 (with 'e' unknown) and would
	// take a 'd', 'h', 'm' or 'y' anywhere as a unit.
	return str + " x" + strconv.FormatFloat(s.rate, 'f', -1, 64) + "\n"
}

// writeFileAtomic writes content to path through a temporary file in the same directory and a
// rename, so a reader sees the old content or the new, never a partial one.
func writeFileAtomic(path, content string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.WriteString(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	// Readable by a server that runs as another user (PostgreSQL).
	_ = os.Chmod(f.Name(), 0o644)
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}
