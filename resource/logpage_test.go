package resource

import (
	"context"
	"testing"

	"github.com/lockcheck/lockcheck/history"
)

// The access log is read a page at a time, in the order Redis applied the accesses, across page
// boundaries and with nothing lost or repeated.
func TestTheLogIsReadInPagesInOrder(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	const n = logPage + 3
	for i := range n {
		if _, err := s.Write(ctx, Access{Client: "c", CS: int64(i + 1)}, map[string]int64{Unfenced: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	if err := s.EachLogEntry(ctx, 7, func(e history.Event) { seqs = append(seqs, e.Seq) }); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != n {
		t.Fatalf("%d entries read, want %d", len(seqs), n)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, seq)
		}
	}
}
