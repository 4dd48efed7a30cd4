package nemesis_test

import (
	"github.com/lockcheck/lockcheck/history"
	. "github.com/lockcheck/lockcheck/nemesis"
)

// testNemesis gathers a nemesis's Config as a test sets it up (targets, network, arming) and
// makes the nemesis from it, as the runner does, once the test gives its schedule (Start).
type testNemesis struct {
	cfg Config
	n   *Nemesis
}

func newTestNemesis(targets map[string]Target, record func(history.Event)) *testNemesis {
	if targets == nil {
		targets = map[string]Target{}
	}
	return &testNemesis{cfg: Config{Targets: targets, Record: record}}
}

// nemesis is the nemesis made so far (one without a schedule if the test gave none).
func (t *testNemesis) nemesis() *Nemesis {
	if t.n == nil {
		t.n = New(t.cfg)
	}
	return t.n
}

func (t *testNemesis) Start(s Schedule) error {
	t.cfg.Schedule = s
	t.n = New(t.cfg)
	return t.n.Start()
}

func (t *testNemesis) AddTarget(name string, tg Target) {
	if t.n == nil {
		t.cfg.Targets[name] = tg
		return
	}
	t.n.AddTarget(name, tg)
}

func (t *testNemesis) Heal()                   { t.nemesis().Heal() }
func (t *testNemesis) Observe(e history.Event) { t.nemesis().Observe(e) }
func (t *testNemesis) Stopped(target, point string, occurrence int) {
	t.nemesis().Stopped(target, point, occurrence)
}
