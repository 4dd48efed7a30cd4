package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Now reads CLOCK_MONOTONIC in nanoseconds. Every process on one machine reads the same clock, so
// timestamps taken in different worker processes can be compared directly.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err))
	}
	return ts.Nano()
}

// Writer appends events to a history file, one JSON object per line. Each event is written with
// its own write call, so whatever was recorded before a crash is on disk.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// Create opens (truncating) a history file for writing.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history %s: %w", path, err)
	}
	return &Writer{f: f}, nil
}

// Append records one event. It is safe for concurrent use. The first error is kept and returned
// by Close; later appends are dropped, since a history with a hole would mislead the checker.
func (w *Writer) Append(e Event) {
	line, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("marshal history event: %v", err)) // only plain data: cannot happen
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.f == nil {
		return
	}
	if _, err := w.f.Write(line); err != nil {
		w.err = fmt.Errorf("append to history %s: %w", w.f.Name(), err)
	}
}

// Close flushes the file to disk and closes it.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	w.f = nil
	return w.err
}

// ReadFile loads a history file. A last line cut short by a crash is ignored; any other bad line is an
// error naming its line number.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	events, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// Decode reads JSON-lines events from r, ordered by time (stable, so events with equal timestamps
// keep the order they were written in).
func Decode(r io.Reader) ([]Event, error) {
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	lineNo := 0
	var pending error
	for sc.Scan() {
		lineNo++
		if pending != nil {
			return nil, pending // a bad line that was not the last one
		}
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			pending = fmt.Errorf("line %d: %w", lineNo, err)
			continue
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	Sort(events)
	return events, nil
}

// Sort orders events by time, keeping the written order among equal timestamps.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
}
