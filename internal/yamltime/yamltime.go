// Package yamltime holds the duration types scenario files are written with: "500ms", "2s",
// never a bare number (its unit would be a guess), and "-2s" only where a sign makes sense.
package yamltime

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a non-negative time.Duration written as in Go ("500ms", "2s").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses "500ms"-style text; a bare number and a negative duration are refused.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
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
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

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

// String writes the duration as Go does ("1.5s").
func (d Duration) String() string { return time.Duration(d).String() }

// String writes the duration as Go does ("-1.5s").
func (d Signed) String() string { return time.Duration(d).String() }
