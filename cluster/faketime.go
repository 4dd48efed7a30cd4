package cluster

// Server clocks (K7, K8): every lock node's redis-server runs under libfaketime, which replaces
// gettimeofday/clock_gettime/time in the process and reads the fake clock's setting from a
// per-node timestamp file. Redis expires keys by its wall clock, so a clock set ahead expires
// leases early and a clock set back keeps them alive longer. The resource is never skewed.
//
// How libfaketime 0.9.10 (Debian) behaves, measured on this machine:
//   - the file holds "+S x R" (S seconds, fractions with '.' in the C locale that Redis keeps;
//     R the rate); with an offset the fake time is start + (now - start)*R + S, where start is
//     when libfaketime initialised in the process. A rate is kept until another "x" is read, so
//     every setting we write names its rate, and the offset is computed so the clock does not
//     jump when the rate changes (see clockSetting.spec).
//   - the file is re-read when a time call finds the cached setting older than
//     FAKETIME_CACHE_DURATION whole seconds. With 1 (the recipe in DESIGN.md) a change shows after
//     1–2 s and a setting that lasts less than that can be missed entirely; with 0 it is re-read
//     at most once a second, so a change shows within 0–1 s (measured with Redis: a PX 5000 key
//     is gone 0.05–0.73 s after the file says +10 s, against 1.04–1.60 s with 1).
//   - rate also scales the process's sleeps and epoll_wait timeouts (Redis's timers run at R).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Where Debian puts the libraries (package libfaketime; libc_malloc_debug comes with libc6 2.34+).
// Variables so tests can pretend libfaketime is missing.
var (
	faketimeLib    = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
	mallocDebugLib = "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
)

const (
	// faketimeFileName is the timestamp file's name in a node's data dir.
	faketimeFileName = "faketime"
	// faketimeCacheDuration: re-read the file at most once a second (see the package note above).
	faketimeCacheDuration = "0"
)

// CheckFaketime reports whether lock nodes can run under libfaketime, with the Debian package to
// install when they cannot. Without it nodes still start, with the machine's clock, and SetClock
// fails.
func CheckFaketime() error {
	var errs []error
	if _, err := os.Stat(faketimeLib); err != nil {
		errs = append(errs, fmt.Errorf("%s not found: install the Debian package libfaketime (apt-get install -y libfaketime)", faketimeLib))
	}
	// Without it redis-server deadlocks at start under libfaketime (jemalloc vs libfaketime).
	if _, err := os.Stat(mallocDebugLib); err != nil {
		errs = append(errs, fmt.Errorf("%s not found (needed next to libfaketime for redis-server): it comes with the Debian package libc6, glibc 2.34 or newer", mallocDebugLib))
	}
	return errors.Join(errs...)
}

// faketimeEnv is the environment that puts a process under libfaketime, reading file.
// FAKETIME_DONT_FAKE_MONOTONIC: a faked CLOCK_MONOTONIC that steps back stalls Redis's expiry
// cycle. libc_malloc_debug: without it redis-server deadlocks at start.
func faketimeEnv(file string) []string {
	return []string{
		"LD_PRELOAD=" + faketimeLib + " " + mallocDebugLib,
		"FAKETIME_TIMESTAMP_FILE=" + file,
		"FAKETIME_CACHE_DURATION=" + faketimeCacheDuration,
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// clockSetting is what SetClock asked for: from anchor (real time) on, the node's clock reads
// real time + offset at anchor and runs at rate. The zero value is the true clock.
type clockSetting struct {
	set    bool
	anchor time.Time
	offset time.Duration
	rate   float64
}

// spec is the timestamp file's content for a process whose libfaketime started at start.
// libfaketime computes start + (t-start)*rate + O; we want anchor + offset + (t-anchor)*rate,
// so O = offset + (anchor-start)*(1-rate).
func (c clockSetting) spec(start time.Time) string {
	if !c.set {
		return "+0\n"
	}
	o := c.offset.Seconds() + c.anchor.Sub(start).Seconds()*(1-c.rate)
	s := strconv.FormatFloat(o, 'f', 6, 64)
	if o >= 0 {
		s = "+" + s
	}
	// 'f' never writes an exponent: libfaketime reads "1e-05" as 1 (with 'e' unknown) and would
	// take a 'd', 'h', 'm' or 'y' anywhere as a unit.
	return s + " x" + strconv.FormatFloat(c.rate, 'f', -1, 64) + "\n"
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
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// SetClock sets the node's wall clock to real time + offset, running at rate from now on (0 or 1:
// true speed); SetClock(0, 1) gives it the true clock back. The setting belongs to the node, as a
// machine's clock would: it survives Restart (a restarted process reads the same file, rewritten
// so the clock carries on where it would be).
//
// The process picks the change up within about a second (libfaketime re-reads the file at most
// once a second), not when SetClock returns; ClockSkew shows when it has. A paused node picks it
// up when resumed. Only lock nodes have a settable clock; on the resource, or on a node started
// without libfaketime, SetClock returns an error.
func (r *Redis) SetClock(offset time.Duration, rate float64) error {
	if r.faketimeFile == "" {
		if r.noClock != nil {
			return fmt.Errorf("redis %s: cannot set its clock: it was started without libfaketime: %w", r.Name, r.noClock)
		}
		return fmt.Errorf("redis %s: cannot set its clock: only lock nodes run under libfaketime", r.Name)
	}
	if rate == 0 {
		rate = 1
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("redis %s: clock rate %v: want a positive finite rate (0 or 1: true speed)", r.Name, rate)
	}
	r.clockMu.Lock()
	defer r.clockMu.Unlock()
	c := clockSetting{set: true, anchor: time.Now(), offset: offset, rate: rate}
	if err := writeFileAtomic(r.faketimeFile, c.spec(r.procStart)); err != nil {
		return fmt.Errorf("redis %s: set clock: %w", r.Name, err)
	}
	r.clock = c
	return nil
}

// writeClockFileLocked writes the node's clock setting for a process about to start at start
// (about when its libfaketime initialises) and records that start. Under clockMu.
func (r *Redis) writeClockFileLocked(start time.Time) error {
	if err := writeFileAtomic(r.faketimeFile, r.clock.spec(start)); err != nil {
		return fmt.Errorf("redis %s: clock file: %w", r.Name, err)
	}
	r.procStart = start
	return nil
}

// ClockSkew asks the server for its time (TIME, which Redis reads from gettimeofday: libfaketime's
// clock for a lock node) and returns how far it is from ours, the machine's real clock, taken
// halfway through the round trip.
func (r *Redis) ClockSkew(ctx context.Context) (time.Duration, error) {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return 0, fmt.Errorf("redis %s: TIME: %w", r.Name, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	before := time.Now()
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nTIME\r\n"); err != nil {
		return 0, fmt.Errorf("redis %s: TIME: %w", r.Name, err)
	}
	br := bufio.NewReader(conn)
	var fields [2]int64
	line, err := br.ReadString('\n')
	if err == nil && line != "*2\r\n" {
		err = fmt.Errorf("answered %q", strings.TrimSpace(line))
	}
	for i := 0; err == nil && i < 2; i++ {
		if line, err = br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "$") {
			if err == nil {
				err = fmt.Errorf("answered %q", strings.TrimSpace(line))
			}
			break
		}
		if line, err = br.ReadString('\n'); err == nil {
			fields[i], err = strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		}
	}
	after := time.Now()
	if err != nil {
		return 0, fmt.Errorf("redis %s: TIME: %w", r.Name, err)
	}
	server := time.Unix(fields[0], fields[1]*1000)
	return server.Sub(before.Add(after.Sub(before) / 2).Round(0)), nil
}
