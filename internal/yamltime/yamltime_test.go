package yamltime

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDurationInTTLs(t *testing.T) {
	for _, c := range []struct {
		text string
		ttl  time.Duration
		want time.Duration
	}{
		{"4ttl", 400 * time.Millisecond, 1600 * time.Millisecond},
		{"1.5ttl", 2 * time.Second, 3 * time.Second},
		{"0.25 ttl", time.Second, 250 * time.Millisecond},
		{"750ms", time.Second, 750 * time.Millisecond}, // absolute: unchanged
	} {
		var d Duration
		if err := yaml.Unmarshal([]byte(c.text), &d); err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got := d.Resolve(c.ttl).D(); got != c.want {
			t.Errorf("%s with ttl %s = %s, want %s", c.text, c.ttl, got, c.want)
		}
	}
}

func TestDurationInTTLsRoundTrip(t *testing.T) {
	d := TTLs(1.5)
	if n, ok := d.Relative(); !ok || n != 1.5 {
		t.Fatalf("Relative() = %v, %v", n, ok)
	}
	out, err := yaml.Marshal(d)
	if err != nil || strings.TrimSpace(string(out)) != "1.5ttl" {
		t.Fatalf("marshal = %q, %v", out, err)
	}
	if _, ok := Duration(time.Second).Relative(); ok {
		t.Fatal("1s reported relative")
	}
}

func TestDurationInTTLsRefused(t *testing.T) {
	for text, want := range map[string]string{
		"-2ttl": "must be positive",
		"0ttl":  "must be positive",
		"xttl":  "not a multiple of the ttl",
		"4":     "not a duration",
		"-1s":   "negative",
	} {
		var d Duration
		err := yaml.Unmarshal([]byte(text), &d)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", text, err, want)
		}
	}
}

func TestUnresolvedDurationPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "4ttl") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	_ = TTLs(4).D()
}
