// Package yamltime holds the duration types scenario files are written with: "500ms", "2s",
// never a bare number (its unit would be a guess), and "-2s" only where a sign makes sense.
//
// A Duration may also be written relative to the scenario's lock TTL ("4ttl", "1.5ttl"; for
// ZooKeeper the session timeout, which is the scenario's ttl): a fault sized in TTLs keeps its
// meaning when the TTL changes. Such a value is relative until the scenario loader resolves it
// against the ttl (Resolve); nothing else may use it before that.
package yamltime

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a non-negative time.Duration written as in Go ("500ms", "2s"), or a multiple of the
// lock's TTL ("4ttl") until resolved.
//
// A relative value is stored as a negative number of millionths of a TTL: absolute durations are
// never negative, so the two cannot be confused, and a Duration stays a plain integer that code
// and tests build with Duration(d).
type Duration time.Duration

// ttlUnit is the suffix of a TTL-relative duration, and ttlScale the fraction of a TTL it counts in.
const (
	ttlUnit  = "ttl"
	ttlScale = 1e6
)

// TTLs returns the duration n TTLs long, to be resolved against the scenario's ttl.
func TTLs(n float64) Duration { return Duration(-int64(math.Round(n * ttlScale))) }

// Relative reports whether d is written in TTLs and, if so, how many.
func (d Duration) Relative() (float64, bool) {
	if d >= 0 {
		return 0, false
	}
	return float64(-d) / ttlScale, true
}

// Resolve returns d as an absolute duration, given the TTL; an absolute d is returned as it is.
func (d Duration) Resolve(ttl time.Duration) Duration {
	n, ok := d.Relative()
	if !ok {
		return d
	}
	return Duration(math.Round(n * float64(ttl)))
}

// D returns the time.Duration. A relative value has none until resolved: asking is a bug.
func (d Duration) D() time.Duration {
	if d < 0 {
		panic(fmt.Sprintf("yamltime: duration %s used before it was resolved against the ttl", d))
	}
	return time.Duration(d)
}

// UnmarshalYAML parses "500ms"-style text or a multiple of the TTL ("4ttl"); a bare number and a
// negative duration are refused.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if num, ok := strings.CutSuffix(strings.TrimSpace(n.Value), ttlUnit); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			switch {
			case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("line %d: %q is not a multiple of the ttl (write it like 4ttl or 1.5ttl)", n.Line, n.Value)
			case v <= 0:
				return fmt.Errorf("line %d: %q: a multiple of the ttl must be positive", n.Line, n.Value)
			case v > 1e6:
				return fmt.Errorf("line %d: %q is more than a million TTLs", n.Line, n.Value)
			}
			*d = TTLs(v)
			return nil
		}
	}
	v, err := parse(n)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %s is negative", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as text.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Signed is a duration that may be negative ("-2s"), for clock offsets.
type Signed time.Duration

// D returns the time.Duration.
func (d Signed) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses "-500ms"-style text.
func (d *Signed) UnmarshalYAML(n *yaml.Node) error {
	v, err := parse(n)
	*d = Signed(v)
	return err
}

// MarshalYAML writes the duration back as text.
func (d Signed) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func parse(n *yaml.Node) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("line %d: want a duration such as 500ms or 2s", n.Line)
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, fmt.Errorf("line %d: %q is not a duration (write it like 500ms or 2s)", n.Line, n.Value)
	}
	return v, nil
}

// String writes the duration as Go does ("1.5s"), or in TTLs ("4ttl") while relative.
func (d Duration) String() string {
	if n, ok := d.Relative(); ok {
		return strconv.FormatFloat(n, 'f', -1, 64) + ttlUnit
	}
	return time.Duration(d).String()
}

// String writes the duration as Go does ("-1.5s").
func (d Signed) String() string { return time.Duration(d).String() }
