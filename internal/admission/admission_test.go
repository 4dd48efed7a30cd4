package admission

import (
	"context"
	"testing"
	"time"
)

func TestAdmitStartsTheFirstJobAndHoldsBackOnBusyCores(t *testing.T) {
	cases := []struct {
		name       string
		running    int
		sinceLast  time.Duration
		busy       float64
		wantStarts bool
	}{
		{"none running, cores saturated", 0, 0, 1, true},
		{"idle cores, spacing passed", 3, 2 * time.Second, 0.2, true},
		{"busy cores", 3, 2 * time.Second, 0.7, false},
		{"too soon after the last start", 3, 100 * time.Millisecond, 0.1, false},
		{"at the cap", 8, 2 * time.Second, 0.1, false},
		{"load not known yet", 1, 2 * time.Second, -1, false},
	}
	for _, c := range cases {
		if got := Admit(c.running, 8, c.sinceLast, time.Second, c.busy, 0.6); got != c.wantStarts {
			t.Errorf("%s: Admit = %v, want %v", c.name, got, c.wantStarts)
		}
	}
}

func TestParseCPULine(t *testing.T) {
	s, err := ParseCPULine("cpu  100 5 50 800 20 3 2 1 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.Busy != 161 || s.Idle != 820 {
		t.Errorf("busy %d idle %d, want 161 and 820", s.Busy, s.Idle)
	}
	if _, err := ParseCPULine("cpu0 1 2 3 4 5"); err == nil {
		t.Error("a per-core line was taken for the aggregate")
	}
	if _, err := ParseCPULine("cpu 1 x 3 4 5"); err == nil {
		t.Error("a field that is not a number was accepted")
	}
}

func TestBusyShareIsTheBusyTicksOverTheWindow(t *testing.T) {
	s := []Sample{{Busy: 100, Idle: 100}, {Busy: 130, Idle: 150}, {Busy: 160, Idle: 200}}
	if got := busyShare(s); got != 0.375 {
		t.Errorf("busyShare = %v, want 0.375 (60 busy of 160)", got)
	}
	if got := busyShare(s[:1]); got != -1 {
		t.Errorf("one sample: %v, want -1", got)
	}
}

// A gate whose cores read idle admits up to its cap, a spacing apart, and no more.
func TestGateAdmitsUpToItsCapOnIdleCores(t *testing.T) {
	ticks := uint64(0)
	g := New(3)
	g.spacing = 10 * time.Millisecond
	g.read = func() (Sample, error) { ticks += 100; return Sample{At: time.Now(), Idle: ticks}, nil }
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 3 {
		if err := g.Wait(ctx); err != nil {
			t.Fatalf("job %d not admitted: %v", i+1, err)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancelShort()
	if err := g.Wait(short); err == nil {
		t.Fatal("a fourth job was admitted beyond the cap of 3")
	}
	g.Done()
	if err := g.Wait(ctx); err != nil {
		t.Fatalf("a job after one ended was not admitted: %v", err)
	}
	if g.Peak() != 3 {
		t.Errorf("peak %d, want 3", g.Peak())
	}
}

// On saturated cores only the first job starts.
func TestGateHoldsBackOnSaturatedCores(t *testing.T) {
	ticks := uint64(0)
	g := New(8)
	g.spacing = 0
	g.read = func() (Sample, error) { ticks += 100; return Sample{At: time.Now(), Busy: ticks}, nil }
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelShort()
	if err := g.Wait(short); err == nil {
		t.Fatal("a second job started while every core was busy")
	}
}
