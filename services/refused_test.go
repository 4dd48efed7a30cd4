package services

import (
	"strings"
	"testing"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/providers"
)

// A fault kind with a server action of its own is refused, before anything starts, on a
// provider whose nodes cannot do it, and accepted on one whose nodes can.
func TestAKindsOwnServerActionIsRefusedWhereNodesLackIt(t *testing.T) {
	type flusher interface{ Flush() error }
	flush := nemesis.CapabilityOf[flusher]("flush")
	uses := []nemesis.Use{{Target: "n1", Act: "flush", Fault: "flush-disk", Need: flush}, {Target: "n1", Act: "pause", Fault: "pause"}}
	err := refused(sampler{node: plainNode{}}, uses)
	if err == nil || !strings.Contains(err.Error(), `flush-disk on n1 (flush): its nodes have no "flush" action`) {
		t.Fatalf("nodes without Flush: %v", err)
	}
	if err := refused(sampler{node: flushingNode{}}, uses); err != nil {
		t.Fatalf("nodes with Flush: %v", err)
	}
}

type sampler struct {
	providers.Provider
	node providers.Node
}

func (s sampler) Name() string           { return "test" }
func (s sampler) Sample() providers.Node { return s.node }

type plainNode struct{ providers.Node }

type flushingNode struct{ providers.Node }

func (flushingNode) Flush() error { return nil }
