package resource

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/history"
)

func store(t *testing.T) *Store {
	t.Helper()
	c, err := cluster.Start(context.Background(), cluster.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	s := Dial(c.Resource.Addr, time.Second)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tok(v int64) *int64 { return &v }

func TestFencedRegistersRejectStaleTokensAndUnfencedAcceptsAll(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	w := func(token *int64, vals map[string]int64) map[string]history.Register {
		t.Helper()
		got, err := s.Write(ctx, "c", 1, token, vals)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	all := func(v int64) map[string]int64 { return map[string]int64{Unfenced: v, FencedWrite: v, FencedRW: v} }

	if got := w(tok(5), all(1)); got[FencedWrite].Status != history.Accepted || got[FencedRW].Status != history.Accepted {
		t.Fatalf("first write with token 5: %+v", got)
	}
	got := w(tok(3), all(2)) // a stale holder
	if got[Unfenced].Status != history.Accepted || got[FencedWrite].Status != history.Rejected || got[FencedRW].Status != history.Rejected {
		t.Fatalf("stale write with token 3: %+v", got)
	}

	// fenced-write checks writes only; fenced-rw checks reads too.
	read, err := s.Read(ctx, "c", 2, tok(3), Registers)
	if err != nil {
		t.Fatal(err)
	}
	if read[Unfenced] != (history.Register{Value: 2, Status: history.Accepted}) ||
		read[FencedWrite] != (history.Register{Value: 1, Status: history.Accepted}) ||
		read[FencedRW].Status != history.Rejected {
		t.Fatalf("read with stale token 3: %+v", read)
	}

	// On fenced-rw a read raises the highest token seen: A(6) then B(7) read, A's write is refused.
	if _, err := s.Read(ctx, "b", 3, tok(7), []string{FencedRW}); err != nil {
		t.Fatal(err)
	}
	if got := w(tok(6), map[string]int64{FencedRW: 9, FencedWrite: 9}); got[FencedRW].Status != history.Rejected || got[FencedWrite].Status != history.Accepted {
		t.Fatalf("write with token 6 after a read with 7: %+v", got)
	}

	final, err := s.Final(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if final[Unfenced].Value != 2 || final[FencedWrite].Value != 9 || final[FencedRW].Value != 1 {
		t.Fatalf("final values: %+v", final)
	}
}

func TestWithoutATokenFencedRegistersRejectEverything(t *testing.T) {
	s := store(t)
	got, err := s.Write(context.Background(), "c", 1, nil, map[string]int64{Unfenced: 1, FencedWrite: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got[Unfenced].Status != history.Accepted || got[FencedWrite].Status != history.Rejected {
		t.Fatalf("tokenless write: %+v", got)
	}
}

func TestTheLogHoldsEveryAccessInTheOrderApplied(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	_, _ = s.Read(ctx, "client-1", 1, tok(1), []string{Unfenced})
	_, _ = s.Write(ctx, "client-2", 4, tok(2), map[string]int64{Unfenced: 1})
	log, err := s.Log(ctx, 123)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("want 2 log entries, got %+v", log)
	}
	if log[0].F != history.Read || log[0].Target != "client-1" || log[1].F != history.Write || log[1].Target != "client-2" ||
		log[1].CS != 4 || *log[1].Token != 2 || log[0].Seq >= log[1].Seq || log[1].Registers[Unfenced].Value != 1 {
		t.Fatalf("log entries: %+v", log)
	}
}
