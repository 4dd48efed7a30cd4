package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// CutPeers isolates the leader from both followers: it stops serving, the other two elect a new
// leader without it, and after HealPeers it rejoins as a follower.
func TestZooKeeperCutPeersIsolatesTheLeaderUntilHealed(t *testing.T) {
	z := startZK(t, 3, "client-1")
	ctx := t.Context()
	old, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.CutPeers(old.Name, nil); err != nil {
		t.Fatal(err)
	}
	links, _ := z.PeerLinks(old.Name, nil)
	if len(links) != 4 {
		t.Fatalf("%d quorum links between %s and its 2 peers, want 4 (both directions)", len(links), old.Name)
	}
	for _, q := range links {
		if !q.IsCut() {
			t.Errorf("%s->%s not cut", q.From, q.To)
		}
	}
	waitFor(t, 15*time.Second, old.Name+" stops serving when cut from its peers", func() bool {
		_, err := old.Mode(ctx)
		return errors.Is(err, ErrNotServing)
	})
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	now, err := z.Leader(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if now == old {
		t.Fatalf("%s still leads while isolated", old.Name)
	}
	if d := directServerConnections(t, z); len(d) > 0 {
		t.Errorf("direct connections between servers during the cut: %v", d)
	}

	if err := z.HealPeers(old.Name, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range links {
		if q.Quorum.IsCut() || q.Election.IsCut() {
			t.Errorf("%s->%s still cut after HealPeers", q.From, q.To)
		}
	}
	d := waitFor(t, 20*time.Second, old.Name+" follows again after the heal", func() bool {
		m, err := old.Mode(ctx)
		return err == nil && m == "follower"
	})
	t.Logf("leader %s isolated: %s took over; healed, %s follows again after %v", old.Name, now.Name, old.Name, d.Round(time.Millisecond))
}

func TestZooKeeperCutPeersRefusesUnknownServers(t *testing.T) {
	z := startZK(t, 3)
	if err := z.CutPeers("zk9", nil); err == nil {
		t.Error("CutPeers of an unknown server succeeded")
	}
	if err := z.CutPeers("zk1", []string{"zk1"}); err == nil {
		t.Error("CutPeers of a server from itself succeeded")
	}
	for _, q := range z.QuorumLinks() {
		if q.IsCut() || q.Quorum.IsCut() || q.Election.IsCut() {
			t.Errorf("a refused CutPeers cut %s->%s", q.From, q.To)
		}
	}
}
