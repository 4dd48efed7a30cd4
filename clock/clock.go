// Package clock is a client's own wall clock. Every lock computes time only through one, so a
// scenario can skew a single client (an offset, a rate error) without touching the machine's clock:
// Go ignores libfaketime, and the client-clock claims (M2's GETSET lock, A7's rate drift; see
// docs/CLAIMS.md) need exactly this.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Skewed is the real clock shifted by an offset and running at a rate (1 = true speed). Both can
// change while it runs; a change never makes it jump except by the new offset itself.
type Skewed struct {
	mu       sync.Mutex
	realBase time.Time // real time at the last change
	fakeBase time.Time // what this clock read at the last change
	rate     float64
}

// NewSkewed starts a clock offset from real time and running at rate.
func NewSkewed(offset time.Duration, rate float64) *Skewed {
	now := time.Now()
	return &Skewed{realBase: now, fakeBase: now.Add(offset), rate: normal(rate)}
}

func normal(rate float64) float64 {
	if rate <= 0 {
		return 1
	}
	return rate
}

// Now reads the clock. The result carries no monotonic reading, so comparisons use the skewed
// wall time as a client would.
func (c *Skewed) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at(time.Now())
}

func (c *Skewed) at(real time.Time) time.Time {
	elapsed := float64(real.Sub(c.realBase)) * c.rate
	return c.fakeBase.Add(time.Duration(elapsed)).Round(0)
}

// Set changes the clock: offset is relative to real time now, rate is the new speed.
func (c *Skewed) Set(offset time.Duration, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.realBase, c.fakeBase, c.rate = now, now.Add(offset), normal(rate)
}

// Offset is how far this clock is ahead of real time right now.
func (c *Skewed) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	return c.at(now).Sub(now.Round(0))
}
