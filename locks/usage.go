package locks

// usage.go: the usage vocabulary — what a program does with a lock besides one acquire and one
// release — and what each design offers of it. Faults vary what the world does to a lock; usage
// varies what the program does with it. The bugs people report against lock libraries sit there
// as often as under faults: an acquire given up just as the lock frees (etcd #10111), a release
// retried after an error, a re-entrant acquire. A scenario's workload asks for steps a client
// takes every cycle (reenter, try, release-retry); aimed steps (abandon) are planned and hunted
// like faults (package nemesis), at a lock state and a program point.

import (
	"fmt"
	"slices"
	"strings"
)

// Usage steps, by the names scenarios, design files, the protocol and `lockcheck list` use.
const (
	// UsageReenter: the holder takes the lock again (nested, to a depth) and gives each inner
	// level back before its work; the outer hold must survive. A yes of an inner acquire is a
	// promise, of the design's promise length from that acquire (its Promise).
	UsageReenter = "reenter"
	// UsageTry: an acquire that makes one attempt, waiting at most a short time, and does not
	// retry. Its no promises nothing; its yes is a promise as any acquire's.
	UsageTry = "try"
	// UsageAbandon: an acquire attempt given up (its context cancelled) at a chosen moment — now,
	// or as the client passes a program point (as an answer of the servers reaches it). An
	// abandoned attempt that answered yes anyway made a promise.
	UsageAbandon = "abandon"
	// UsageReleaseRetry: a release whose outcome was unknown (an error, a timeout) is sent again.
	// A retry that removes another client's hold breaks that client's promise.
	UsageReleaseRetry = "release-retry"
)

// UsageStep is one step of the vocabulary.
type UsageStep struct {
	Name  string
	Means string // what a client does, in a few words
	// Aimed: the step is planned or hunted like a fault (nemesis kind of the same name), at a
	// client in a lock state and a program point; otherwise a scenario's workload asks for it
	// (a client then takes it every cycle).
	Aimed bool
	// Everyone: every design offers it, external programs included: it needs nothing of the lock
	// but acquire and release. InProcess: every design whose lock runs in lockcheck's own process
	// offers it (it needs the context an acquire takes); an external program says whether it does.
	Everyone, InProcess bool
}

// UsageSteps is the vocabulary, in the order lists show it.
var UsageSteps = []UsageStep{
	{Name: UsageReenter, Means: "take the lock again while holding it, to a depth, and give each inner level back"},
	{Name: UsageTry, Means: "acquire with one attempt that waits at most a short time, and no retry", Everyone: true},
	{Name: UsageAbandon, Means: "give up an acquire attempt (cancel its context) now or as the client passes a program point",
		Aimed: true, InProcess: true},
	{Name: UsageReleaseRetry, Means: "send a release again when its outcome was unknown (an error, a timeout)", Everyone: true},
}

// UsageNames lists the vocabulary's names.
func UsageNames() []string {
	out := make([]string, len(UsageSteps))
	for i, s := range UsageSteps {
		out[i] = s.Name
	}
	return out
}

// LookupUsage returns the step called name, or an error that lists the valid names.
func LookupUsage(name string) (UsageStep, error) {
	for _, s := range UsageSteps {
		if s.Name == name {
			return s, nil
		}
	}
	return UsageStep{}, fmt.Errorf("unknown usage step %q; valid steps: %s", name, strings.Join(UsageNames(), ", "))
}

// CheckUsage checks a list of offered steps (a design's, a design file's): every name must be one
// of the vocabulary's, once.
func CheckUsage(steps []string) error {
	for i, s := range steps {
		if _, err := LookupUsage(s); err != nil {
			return err
		}
		if slices.Contains(steps[:i], s) {
			return fmt.Errorf("usage step %q listed twice", s)
		}
	}
	return nil
}

// Offers reports whether the design offers step: it lists it, or every design of its kind does.
func (d Design) Offers(step string) bool {
	if slices.Contains(d.Usage, step) || step == UsageReenter && d.Reentrant {
		return true
	}
	s, err := LookupUsage(step)
	return err == nil && (s.Everyone || s.InProcess && !d.External)
}

// Offered lists the steps the design offers, in the vocabulary's order.
func (d Design) Offered() []string {
	var out []string
	for _, s := range UsageSteps {
		if d.Offers(s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// NotOffered says why the design cannot take step ("" when it can), for an n/a cell or a refused
// scenario.
func (d Design) NotOffered(step string) string {
	if d.Offers(step) {
		return ""
	}
	if step == UsageReenter {
		return fmt.Sprintf("%s is not reentrant: the holder cannot take the lock again", d.Name)
	}
	have := d.Offered()
	if len(have) == 0 {
		have = []string{"none"}
	}
	return fmt.Sprintf("%s does not offer usage step %q (it offers: %s)", d.Name, step, strings.Join(have, ", "))
}
