// Package shard splits a suite (matrix cells, debate scenarios) across CI jobs: job K of N runs
// the items whose name hashes to K. An item's shard depends only on its own name and N, so it
// does not move when flags are given in another order or when items are added to the registry.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is job K of N (1-based). The zero Shard means "no sharding": every item is in it.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

// Parse reads "K/N". The empty string is the zero Shard (everything).
func Parse(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(strings.TrimSpace(ks))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 1/3 for the first of three", s)
	case n < 1:
		return Shard{}, fmt.Errorf("shard %q: N must be at least 1", s)
	case k < 1 || k > n:
		return Shard{}, fmt.Errorf("shard %q: K must be between 1 and %d", s, n)
	}
	return Shard{K: k, N: n}, nil
}

// Enabled reports whether s selects a part of the suite (not the zero Shard).
func (s Shard) Enabled() bool { return s.N > 0 }

func (s Shard) String() string {
	if !s.Enabled() {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Has reports whether the item named key belongs to s.
func (s Shard) Has(key string) bool { return !s.Enabled() || Of(key, s.N) == s.K }

// Of is the shard (1..n) the item named key belongs to: FNV-1a of the name, modulo n. Changing
// this function reshuffles every suite's split, so it must stay as it is.
func Of(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64()%uint64(n)) + 1
}

// Missing lists the shards of 1..n not in have, as "K/N".
func Missing(have map[int]bool, n int) []string {
	var out []string
	for k := 1; k <= n; k++ {
		if !have[k] {
			out = append(out, fmt.Sprintf("%d/%d", k, n))
		}
	}
	return out
}
