package faketime

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSpecKeepsTheClockContinuousAcrossRateChanges(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		s    setting
		want string
	}{
		{setting{}, "+0\n"},
		{setting{set: true, anchor: start.Add(time.Hour), offset: 10 * time.Second, rate: 1}, "+10.000000 x1\n"},
		{setting{set: true, anchor: start, offset: -5500 * time.Millisecond, rate: 1}, "-5.500000 x1\n"},
		{setting{set: true, anchor: start, offset: 0, rate: 1}, "+0.000000 x1\n"},
		// 10 s after the process started, at rate 1.1: libfaketime would add 1 s; take it back.
		{setting{set: true, anchor: start.Add(10 * time.Second), offset: 0, rate: 1.1}, "-1.000000 x1.1\n"},
		{setting{set: true, anchor: start.Add(10 * time.Second), offset: 2 * time.Second, rate: 0.5}, "+7.000000 x0.5\n"},
		{setting{set: true, anchor: start, offset: time.Microsecond, rate: 0.00001}, "+0.000001 x0.00001\n"},
	} {
		if got := tc.s.spec(start); got != tc.want {
			t.Errorf("%+v: spec %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestSetWritesTheFileAtomicallyAndRefusesBadRates(t *testing.T) {
	c, err := New(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(c.Path()); err != nil || string(b) != "+0\n" {
		t.Fatalf("new clock file holds %q, %v", b, err)
	}
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := c.Set(0, rate); err == nil {
			t.Errorf("Set(0, %v) succeeded", rate)
		}
	}
	c.procStart = time.Now().Add(-time.Hour)
	if err := c.Set(2*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(c.Path()); err != nil || string(b) != "+2.000000 x1\n" {
		t.Fatalf("Set(2s, 0) wrote %q, %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(c.Path()), ".*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

func TestCheckNamesTheDebianPackage(t *testing.T) {
	old := Lib
	Lib = "/nonexistent/libfaketime.so.1"
	defer func() { Lib = old }()
	if err := Check(); err == nil {
		t.Fatal("Check passed without libfaketime")
	} else if want := "apt-get install -y libfaketime"; !strings.Contains(err.Error(), want) {
		t.Fatalf("Check = %v, want it to say %q", err, want)
	}
}
