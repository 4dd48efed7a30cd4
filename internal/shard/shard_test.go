package shard

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	if s, err := Parse("2/3"); err != nil || s != (Shard{K: 2, N: 3}) || s.String() != "2/3" {
		t.Fatalf("2/3: %+v %v", s, err)
	}
	if s, err := Parse(""); err != nil || s.Enabled() || !s.Has("anything") {
		t.Fatalf("empty: %+v %v", s, err)
	}
	for in, want := range map[string]string{
		"3":   "want K/N",
		"a/3": "want K/N",
		"0/3": "K must be between 1 and 3",
		"4/3": "K must be between 1 and 3",
		"1/0": "N must be at least 1",
		"1/":  "want K/N",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("Parse(%q) = %v, want an error naming it and saying %q", in, err, want)
		}
	}
}

// Every item is in exactly one shard, and its shard does not depend on the other items.
func TestEveryItemInExactlyOneShard(t *testing.T) {
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("lock-%d × fault-%d", i%17, i%9))
	}
	for _, n := range []int{1, 2, 3, 7} {
		sizes := make([]int, n+1)
		for _, key := range keys {
			in := 0
			for k := 1; k <= n; k++ {
				if (Shard{K: k, N: n}).Has(key) {
					in++
					sizes[k]++
				}
			}
			if in != 1 {
				t.Fatalf("%q is in %d of %d shards", key, in, n)
			}
		}
		for k := 1; k <= n; k++ { // a rough balance: no shard gets nothing out of 200
			if sizes[k] == 0 {
				t.Errorf("shard %d/%d is empty: %v", k, n, sizes)
			}
		}
	}
	// Pinned values: a change of the hash would reshuffle every CI job matrix.
	for key, want := range map[string][2]int{"set-nx-px × none": {2, 1}, "setnx-del × none": {2, 3}, "setnx-del × " +
		"kill-holder": {1, 2}, "k3-redlock.yaml": {2, 3}} {
		if got := [2]int{Of(key, 2), Of(key, 3)}; got != want {
			t.Errorf("%q: shards of 2 and of 3 = %v, want %v", key, got, want)
		}
	}
}

func TestMissing(t *testing.T) {
	if got := Missing(map[int]bool{2: true}, 3); strings.Join(got, ",") != "1/3,3/3" {
		t.Fatalf("got %v", got)
	}
}
