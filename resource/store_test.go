package resource

import (
	"context"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/testredis"
)

// store starts the resource's own redis-server, as a run does, and dials it.
func store(t *testing.T) *Store {
	t.Helper()
	s := Dial(testredis.Addr(t, "resource"), time.Second)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tok(v int64) *int64 { return &v }

func TestFencedRegistersRejectStaleTokensAndUnfencedAcceptsAll(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	w := func(token *int64, vals map[string]int64) map[string]history.Register {
		t.Helper()
		got, err := s.Write(ctx, Access{Client: "c", CS: 1, Token: token}, vals)
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
	read, err := s.Read(ctx, Access{Client: "c", CS: 2, Token: tok(3)}, []string{Unfenced, FencedWrite, FencedRW})
	if err != nil {
		t.Fatal(err)
	}
	if read[Unfenced] != (history.Register{Value: 2, Status: history.Accepted}) ||
		read[FencedWrite] != (history.Register{Value: 1, Status: history.Accepted}) ||
		read[FencedRW].Status != history.Rejected {
		t.Fatalf("read with stale token 3: %+v", read)
	}

	// On fenced-rw a read raises the highest token seen: A(6) then B(7) read, A's write is refused.
	if _, err := s.Read(ctx, Access{Client: "b", CS: 3, Token: tok(7)}, []string{FencedRW}); err != nil {
		t.Fatal(err)
	}
	if got := w(tok(6), map[string]int64{FencedRW: 9, FencedWrite: 9}); got[FencedRW].Status != history.Rejected ||
		got[FencedWrite].Status != history.Accepted {
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

func TestWithoutATokenOrValueCheckedRegistersRejectEverything(t *testing.T) {
	s := store(t)
	got, err := s.Write(context.Background(), Access{Client: "c", CS: 1}, map[string]int64{Unfenced: 1, FencedWrite: 1, CASRandom: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got[Unfenced].Status != history.Accepted || got[FencedWrite].Status != history.Rejected || got[CASRandom].Status != history.Rejected {
		t.Fatalf("tokenless, valueless write: %+v", got)
	}
}

func TestTheLogHoldsEveryAccessInTheOrderApplied(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	_, _ = s.Read(ctx, Access{Client: "client-1", CS: 1, Token: tok(1)}, []string{Unfenced})
	_, _ = s.Write(ctx, Access{Client: "client-2", CS: 4, Token: tok(2)}, map[string]int64{Unfenced: 1})
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

// cas-random (A4): a read claims the register for the caller's lock value; a write is accepted
// only while the claim is still the caller's. The last reader wins, whatever the order of values.
func TestCASRandomAcceptsOnlyTheLastReadersWrite(t *testing.T) {
	s := store(t)
	ctx := context.Background()
	a := Access{Client: "client-1", CS: 1, Value: "zzz-a"} // values are unordered: "a" > "b" here
	b := Access{Client: "client-2", CS: 1, Value: "b"}
	read := func(who Access) history.Register {
		t.Helper()
		got, err := s.Read(ctx, who, []string{CASRandom})
		if err != nil {
			t.Fatal(err)
		}
		return got[CASRandom]
	}
	write := func(who Access, v int64) string {
		t.Helper()
		got, err := s.Write(ctx, who, map[string]int64{CASRandom: v})
		if err != nil {
			t.Fatal(err)
		}
		return got[CASRandom].Status
	}

	if r := read(a); r != (history.Register{Value: 0, Status: history.Accepted}) {
		t.Fatalf("first read: %+v", r)
	}
	if st := write(a, 1); st != history.Accepted {
		t.Fatalf("write by the only reader: %s", st)
	}
	// a reads, b reads (claims), a's write is refused, b's goes through.
	read(a)
	if r := read(b); r.Value != 1 || r.Status != history.Accepted {
		t.Fatalf("b's read: %+v", r)
	}
	if st := write(a, 2); st != history.Rejected {
		t.Fatalf("a wrote after b claimed the register: %s", st)
	}
	if st := write(b, 2); st != history.Accepted {
		t.Fatalf("b, the last reader, was refused: %s", st)
	}
	// A later read by the stale client claims the register back: the check is identity, not order.
	read(a)
	if st := write(b, 3); st != history.Rejected {
		t.Fatalf("b wrote after a claimed the register back: %s", st)
	}
	if st := write(a, 3); st != history.Accepted {
		t.Fatalf("a, the last reader, was refused: %s", st)
	}
	// A client whose lock has no value can neither claim nor write.
	none := Access{Client: "client-3", CS: 1}
	if r := read(none); r.Status != history.Rejected {
		t.Fatalf("valueless read: %+v", r)
	}
	if st := write(a, 4); st != history.Accepted {
		t.Fatalf("a valueless read must not disturb the claim: %s", st)
	}

	final, err := s.Final(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if final[CASRandom].Value != 4 {
		t.Fatalf("final cas-random: %+v", final[CASRandom])
	}
	log, err := s.Log(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 11 {
		t.Fatalf("want 11 log entries, got %d", len(log))
	}
}
