package nemesis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A hunt's partitions draw both modes.
func TestHuntPartitionsDrawBothModes(t *testing.T) {
	r := huntPackage()
	r.Faults, r.ByKind = []string{"partition"}, map[string][]string{"partition": {Holder, Waiter, Overtaken}}
	rng := rand.New(rand.NewPCG(7, 0x68756e74))
	modes := map[string]int{}
	for range 40 {
		f, _, ok := r.drawMove(rng)
		if !ok {
			t.Fatal("no move drawn")
		}
		modes[f.Params.(*PartitionParams).Mode]++
	}
	if modes[Reset] == 0 || modes[Drop] == 0 || len(modes) != 2 {
		t.Fatalf("40 hunted partitions drew modes %v: want reset and drop", modes)
	}
}

// A server's partition in drop mode asks the provider for "drop" (an external cluster's hook of
// that name), in reset mode (the default) for "cut"; both heal with "heal".
func TestDropAsksServersForDrop(t *testing.T) {
	s := Schedule{Faults: []Fault{
		{Kind: "partition", Target: "zk1", Params: &PartitionParams{Mode: Drop}},
		{Kind: "partition", Target: "zk2"},
		{Kind: "partition", Target: "zk3", Params: PartitionParams{Mode: Reset}},
	}}
	var got []string
	for _, u := range s.ServerUses(func(string) bool { return false }) {
		got = append(got, u.Target+" "+u.Act)
	}
	if want := "zk1 drop, zk1 heal, zk2 cut, zk2 heal, zk3 cut, zk3 heal"; strings.Join(got, ", ") != want {
		t.Fatalf("uses: %s\nwant %s", strings.Join(got, ", "), want)
	}
}

// An unknown mode is refused with the valid ones.
func TestUnknownPartitionModeIsRefused(t *testing.T) {
	var got []string
	Check(Fault{Kind: "partition", Target: "client-1", For: dur(time.Second), Params: &PartitionParams{Mode: "blackhole"}}, noView{},
		func(field, format string, a ...any) { got = append(got, field+": "+fmt.Sprintf(format, a...)) })
	if len(got) != 1 || !strings.Contains(got[0], `mode: unknown mode "blackhole"; valid modes: reset, drop`) {
		t.Fatalf("reported %q", got)
	}
}
