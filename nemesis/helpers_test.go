package nemesis_test

// Helpers the nemesis's tests share: what it records, a real process to act on, durations and
// fault names as scenarios write them.

import (
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/proc"
	"github.com/lockcheck/lockcheck/internal/yamltime"
)

// recorder collects what the nemesis records.
type recorder struct {
	mu     sync.Mutex
	events []history.Event
}

func (r *recorder) record(e history.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Event(nil), r.events...)
}

// sleepProc is a real process as a nemesis target (a client: link faults name one).
type sleepProc struct{ *proc.Process }

func (p sleepProc) Pause() error  { return p.Stop() }
func (p sleepProc) Resume() error { return p.Cont() }

func sleeper(t *testing.T) sleepProc {
	t.Helper()
	p, err := proc.StartProcess(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return sleepProc{p}
}

func stateOf(t *testing.T, p sleepProc) byte {
	t.Helper()
	s, err := p.State()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dur(d time.Duration) yamltime.Duration  { return yamltime.Duration(d) }
func signed(d time.Duration) yamltime.Signed { return yamltime.Signed(d) }

// Kind names, as scenarios write them.
const (
	PauseFault     = history.Pause
	KillFault      = history.Kill
	ClockFault     = history.Clock
	CrashFault     = history.Crash
	PartitionFault = history.Partition
	DelayFault     = history.Delay
	StrobeFault    = history.Strobe
)
