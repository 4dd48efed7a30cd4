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
		startedUp  bool
		busy       float64
		wantStarts bool
	}{
		{"none running, cores saturated", 0, false, 1, true},
		{"idle cores, the previous start-up over", 3, true, 0.2, true},
		{"busy cores", 3, true, 0.7, false},
		{"the previous job still starting", 3, false, 0.1, false},
		{"at the cap", 8, true, 0.1, false},
		{"load not known yet", 1, true, -1, false},
	}
	for _, c := range cases {
		if got := Admit(c.running, 8, c.startedUp, c.busy, 0.6); got != c.wantStarts {
			t.Errorf("%s: Admit = %v, want %v", c.name, got, c.wantStarts)
		}
	}
}

// A job that says it is ready lets the next one start a sample later; one that does not holds
// it back the whole spacing; a Ready from an older job does not count for the latest.
func TestGateStartsTheNextJobOnceThePreviousIsReady(t *testing.T) {
	ticks := uint64(0)
	g := New(8)
	g.spacing = time.Hour
	g.read = func() (Sample, error) { ticks += 100; return Sample{At: time.Now(), Idle: ticks}, nil }
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first, err := g.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancelShort()
	if _, err := g.Wait(short); err == nil {
		t.Fatal("a second job started while the first was still starting")
	}
	first.Ready()
	began := time.Now()
	second, err := g.Wait(ctx)
	if err != nil {
		t.Fatalf("no second job once the first was ready: %v", err)
	}
	if waited := time.Since(began); waited < every {
		t.Errorf("the second job started %v after the first was ready, before a sample (%v) showed it", waited, every)
	}
	first.Ready() // the first again: it is not the latest start
	short2, cancelShort2 := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancelShort2()
	if _, err := g.Wait(short2); err == nil {
		t.Fatal("an older job's Ready let a third start while the second was still starting")
	}
	second.Done() // a job that ends is over its start-up too
	if _, err := g.Wait(ctx); err != nil {
		t.Fatalf("no third job once the second ended: %v", err)
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
	var first Job
	for i := range 3 {
		j, err := g.Wait(ctx)
		if err != nil {
			t.Fatalf("job %d not admitted: %v", i+1, err)
		}
		if i == 0 {
			first = j
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancelShort()
	if _, err := g.Wait(short); err == nil {
		t.Fatal("a fourth job was admitted beyond the cap of 3")
	}
	first.Done()
	if _, err := g.Wait(ctx); err != nil {
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
	if _, err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelShort()
	if _, err := g.Wait(short); err == nil {
		t.Fatal("a second job started while every core was busy")
	}
}
