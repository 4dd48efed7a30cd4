package history

import (
	"bufio"
	"encoding/json"
	"errors"
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

// MaxLineBytes bounds one line of a history. A real event is a few hundred bytes; a longer line
// is not an event this harness wrote, and reading it whole could take any amount of memory.
const MaxLineBytes = 1 << 20

// LineError is a problem with one line of a history: it names the file (when known), the line
// and, through Err, the field.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ScanFile reads a history file in file order; see Scan. Errors name the file and the line.
func ScanFile(path string, fn func(line int, e *Event) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	err = Scan(f, fn)
	var le *LineError
	if errors.As(err, &le) && le.Path == "" {
		le.Path = path
	}
	return err
}

// Scan reads JSON-lines events from r in file order and calls fn with each and its line number
// (1-based). The event passed to fn and its Registers are reused for the next line: fn must copy
// what it keeps (Event.Clone). A line that is not an event this harness could have
// written is an error naming the line and the field: bad JSON, a field of the wrong type, a
// missing field, an access that took effect without registers, a client's completion without
// its invoke, a line over MaxLineBytes. Only a last line without its newline (cut short by a
// crash while it was written) is skipped when it does not parse. An error fn returns stops the
// scan and comes back wrapped in a LineError.
func Scan(r io.Reader, fn func(line int, e *Event) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	p := &parser{intern: map[string]string{}}
	v := newValidator()
	var e Event
	regs := map[string]Register{}
	var long []byte // a line longer than br's buffer, assembled
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull && len(long) <= MaxLineBytes {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > MaxLineBytes {
				return &LineError{Line: lineNo, Err: fmt.Errorf("longer than %d bytes: not an event", MaxLineBytes)}
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return &LineError{Line: lineNo, Err: err}
		}
		last := err == io.EOF
		terminated := len(line) > 0 && line[len(line)-1] == '\n'
		if blank(line) {
			if last {
				return v.finish()
			}
			continue
		}
		clear(regs)
		s, perr := p.parseEvent(line, &e, regs)
		if perr == nil {
			perr = v.check(&e, s, lineNo)
		}
		if perr != nil {
			if last && !terminated {
				return v.finish() // torn by a crash while it was being written
			}
			return &LineError{Line: lineNo, Err: perr}
		}
		if ferr := fn(lineNo, &e); ferr != nil {
			return &LineError{Line: lineNo, Err: ferr}
		}
		if last {
			return v.finish()
		}
	}
}

func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// Clone copies e with its own Registers and Params, for keeping an event Scan passed.
func (e *Event) Clone() Event {
	c := *e
	if e.Registers != nil {
		c.Registers = make(map[string]Register, len(e.Registers))
		for k, v := range e.Registers {
			c.Registers[k] = v
		}
	}
	if e.Params != nil {
		c.Params = append(json.RawMessage{}, e.Params...)
	}
	if e.Token != nil {
		t := *e.Token
		c.Token = &t
	}
	if e.Rule != nil {
		r := *e.Rule
		c.Rule = &r
	}
	return c
}

// ReadFile loads a whole history file, ordered by time (see Decode). Errors name the file and the
// line. For a long history, ScanFile keeps less in memory.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	events, err := Decode(f)
	var le *LineError
	if errors.As(err, &le) && le.Path == "" {
		le.Path = path
	}
	return events, err
}

// Decode reads JSON-lines events from r (see Scan), ordered by time (stable, so events with equal
// timestamps keep the order they were written in).
func Decode(r io.Reader) ([]Event, error) {
	var events []Event
	err := Scan(r, func(_ int, e *Event) error {
		events = append(events, e.Clone())
		return nil
	})
	if err != nil {
		return nil, err
	}
	Sort(events)
	return events, nil
}

// Sort orders events by time, keeping the written order among equal timestamps.
func Sort(events []Event) {
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
}
