package locks_test

// The database designs against real servers (MariaDB, PostgreSQL), client by client, without the
// runner: what each gives and what it lacks. The source article says database locks lack expiry,
// re-entrancy, blocking and fairness; these tests show which of the designs really lack which.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/locks"
	_ "github.com/lockcheck/lockcheck/providers/local"
	"github.com/lockcheck/lockcheck/services"
	_ "github.com/lockcheck/lockcheck/services/all"
)

var dbDesigns = []string{"db-unique-row", "db-for-update", "mysql-get-lock", "pg-advisory", "pg-advisory-xact"}

// dbService is a started database service with a lock per client, each through its own link.
type dbService struct {
	t   testing.TB
	top *services.Topology
	d   locks.Design
	key string
}

// shared are the servers of the tests that need no settings of their own, one per service kind,
// started on first use and stopped by TestMain.
var shared = map[string]*services.Topology{}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, top := range shared {
		_ = top.Stop()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

var sharedDir string

// startDB gives design's service with clients a, b and c: the shared one, or with server
// settings (YAML) a fresh one. Each test contends for its own key.
func startDB(t testing.TB, design, server string) *dbService {
	t.Helper()
	d, err := locks.Get(design)
	if err != nil {
		t.Fatal(err)
	}
	s := &dbService{t: t, d: d, key: "lock:" + t.Name()}
	if server == "" && shared[d.ServiceName()] != nil {
		s.top = shared[d.ServiceName()]
		return s
	}
	var dir string
	if server == "" {
		if sharedDir == "" {
			if sharedDir, err = os.MkdirTemp("", "lockcheck-db-locks-"); err != nil {
				t.Fatal(err)
			}
		}
		dir = filepath.Join(sharedDir, d.ServiceName())
	} else {
		dir = t.TempDir()
	}
	for _, p := range []string{dir, filepath.Dir(dir)} { // the postgres user must reach its folder
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := services.Spec{Design: d}
	if server != "" {
		spec.Server = yamlNode(t, server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.top, err = services.StartKind(ctx, spec, services.Options{Dir: dir, Clients: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if server == "" {
		shared[d.ServiceName()] = s.top
	} else {
		t.Cleanup(func() { _ = s.top.Stop() })
	}
	return s
}

// lock makes client's lock (each call a new client process's worth: its own session).
func (s *dbService) lock(client string) locks.Lock {
	s.t.Helper()
	e := s.top.Endpoints(client)
	l, err := s.d.New(locks.Env{Client: client, Nodes: e.Nodes, Params: e.Params, Key: s.key,
		Timeout: 250 * time.Millisecond, Point: func(string) {}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = l.Close() })
	return l
}

func acquire(l locks.Lock, within time.Duration) (*int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return l.Acquire(ctx)
}

func release(l locks.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return l.Release(ctx)
}

// acquireSoon retries until l holds the lock or d passes; it returns the token, or the last error.
func acquireSoon(l locks.Lock, d time.Duration) (*int64, error) {
	deadline := time.Now().Add(d)
	for {
		tok, err := acquire(l, 500*time.Millisecond)
		if err == nil || time.Now().After(deadline) {
			return tok, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every design excludes a second client while one holds the lock, hands it over on release, and
// gives the next holder a larger token.
func TestDatabaseLocksExcludeAndHandOver(t *testing.T) {
	for _, name := range dbDesigns {
		t.Run(name, func(t *testing.T) {
			s := startDB(t, name, "")
			a, b := s.lock("a"), s.lock("b")
			t1, err := acquire(a, time.Second)
			if err != nil || t1 == nil {
				t.Fatalf("a: token %v, %v", t1, err)
			}
			if _, err := acquire(b, 400*time.Millisecond); !errors.Is(err, locks.ErrBusy) {
				t.Fatalf("b while a holds: %v, want ErrBusy (certainly not taken)", err)
			}
			if err := release(a); err != nil {
				t.Fatalf("a release: %v", err)
			}
			t2, err := acquire(b, time.Second)
			if err != nil || t2 == nil || *t2 <= *t1 {
				t.Fatalf("b after a released: token %v (a had %d), %v; want a larger token", deref(t2), *t1, err)
			}
			if err := release(a); !errors.Is(err, locks.ErrNotHeld) && name != "db-unique-row" {
				t.Errorf("a releasing b's lock: %v, want ErrNotHeld", err)
			}
		})
	}
}

// Expiry: none of them expires by time, but only the table lock outlives its holder. A holder
// whose session ends (its process died: the connection closes) frees a session's or a
// transaction's lock at once; the row of db-unique-row stays for ever.
func TestOnlyTheTableLockOutlivesADeadHolder(t *testing.T) {
	for _, name := range dbDesigns {
		t.Run(name, func(t *testing.T) {
			s := startDB(t, name, "")
			a, b := s.lock("a"), s.lock("b")
			if _, err := acquire(a, time.Second); err != nil {
				t.Fatal(err)
			}
			_ = a.Close() // the holder dies: its connection closes
			_, err := acquireSoon(b, 2*time.Second)
			if stuck := errors.Is(err, locks.ErrBusy); stuck != (name == "db-unique-row") {
				t.Errorf("2 s after the holder died, b: %v; want stuck only for db-unique-row", err)
			}
		})
	}
}

// Re-entrancy: GET_LOCK and session advisory locks count nested takes and need as many
// releases; the table lock refuses a second take; the transaction locks take it again but the
// first release (COMMIT) frees it for everyone.
func TestReentrancy(t *testing.T) {
	for _, tt := range []struct {
		name string
		// secondTake: the holder's second acquire succeeds; heldAfterOne: after one release the
		// lock is still the holder's.
		secondTake, heldAfterOne bool
	}{
		{"db-unique-row", false, false},
		{"db-for-update", true, false},
		{"mysql-get-lock", true, true},
		{"pg-advisory", true, true},
		{"pg-advisory-xact", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startDB(t, tt.name, "")
			a, b := s.lock("a"), s.lock("b")
			if _, err := acquire(a, time.Second); err != nil {
				t.Fatal(err)
			}
			_, err := acquire(a, 400*time.Millisecond)
			if (err == nil) != tt.secondTake {
				t.Fatalf("the holder's second acquire: %v; want it to succeed: %v", err, tt.secondTake)
			}
			if err := release(a); err != nil {
				t.Fatal(err)
			}
			_, err = acquire(b, 300*time.Millisecond)
			if held := errors.Is(err, locks.ErrBusy); held != tt.heldAfterOne {
				t.Errorf("b after the holder's first release: %v; want the lock still held: %v", err, tt.heldAfterOne)
			}
			if tt.secondTake && tt.heldAfterOne {
				if err := release(a); err != nil {
					t.Fatal(err)
				}
				if _, err := acquire(b, time.Second); err != nil {
					t.Errorf("b after the second release: %v", err)
				}
			}
		})
	}
}

// Blocking and fairness: SELECT ... FOR UPDATE and GET_LOCK wait in the server and are granted
// in the order the waiters came, the moment the holder lets go; the table lock and
// pg_try_advisory_lock answer "busy" at once, and waiters retry by luck.
func TestBlockingLocksGrantWaitersInOrder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		blocking bool
	}{
		{"db-unique-row", false}, {"db-for-update", true}, {"mysql-get-lock", true}, {"pg-advisory", false}, {"pg-advisory-xact", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startDB(t, tt.name, "")
			a, b, c := s.lock("a"), s.lock("b"), s.lock("c")
			// Deadlines long enough for a first connection to a loaded server: what is judged is
			// who is answered what, not how fast.
			if _, err := acquire(a, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			type result struct {
				who string
				at  time.Duration
				err error
			}
			began := time.Now()
			got := make(chan result, 2)
			wait := func(who string, l locks.Lock, after time.Duration) {
				time.Sleep(after)
				_, err := acquire(l, 10*time.Second)
				got <- result{who, time.Since(began), err}
				if err == nil {
					time.Sleep(100 * time.Millisecond)
					_ = release(l)
				}
			}
			go wait("b", b, 0)
			go wait("c", c, 100*time.Millisecond) // comes second
			if !tt.blocking {
				// Both are answered while a still holds, however slow the machine: busy, for
				// certain (a wait in the server would end in its deadline's error instead).
				for range 2 {
					if r := <-got; !errors.Is(r.err, locks.ErrBusy) {
						t.Errorf("%s answered after %s with %v; want busy at once (no waiting in the server)", r.who, r.at, r.err)
					}
				}
				if err := release(a); err != nil {
					t.Fatal(err)
				}
				return
			}
			time.Sleep(400 * time.Millisecond)
			released := time.Since(began)
			if err := release(a); err != nil {
				t.Fatal(err)
			}
			first, second := <-got, <-got
			if first.who != "b" || first.err != nil || first.at < released {
				t.Errorf("first granted: %s at %s (%v), holder released at %s; want b, the first waiter, after the release",
					first.who, first.at, first.err, released)
			}
			if second.who != "c" || second.err != nil {
				t.Errorf("second: %s (%v); want c, granted after b", second.who, second.err)
			}
		})
	}
}

// An acquire whose statement is held back past the client's timeout has an unknown outcome: the
// client reports neither success nor "busy", and drops its session. The statement still reaches
// the server: the table lock's INSERT commits and the lock is taken by nobody, for ever; a
// session's lock is freed once the server sees the dropped connection.
func TestAnAcquireWhoseReplyIsLostIsUnknown(t *testing.T) {
	for _, name := range dbDesigns {
		t.Run(name, func(t *testing.T) {
			s := startDB(t, name, "")
			a, b := s.lock("a"), s.lock("b")
			if _, err := acquire(a, time.Second); err != nil { // a's session is open
				t.Fatal(err)
			}
			if err := release(a); err != nil {
				t.Fatal(err)
			}
			if err := s.top.Delay("a", nil, time.Second, 0); err != nil {
				t.Fatal(err)
			}
			_, err := acquire(a, 400*time.Millisecond)
			if err == nil || errors.Is(err, locks.ErrBusy) {
				t.Fatalf("a's acquire with its statement held back: %v; want an error of unknown outcome", err)
			}
			time.Sleep(800 * time.Millisecond) // the statement lands meanwhile
			if err := s.top.Heal("a", nil); err != nil {
				t.Fatal(err)
			}
			_, err = acquireSoon(b, 2*time.Second)
			if stuck := errors.Is(err, locks.ErrBusy); stuck != (name == "db-unique-row") {
				t.Errorf("b after a's lost acquire: %v; want the lock taken by nobody only for db-unique-row", err)
			}
		})
	}
}

// When the server ends an idle holder's session, the PostgreSQL designs learn it at the release
// (the server says why): the release reports ErrNotHeld, and the lock was someone else's since.
func TestReleaseAfterTheServerEndedTheSessionIsNotHeld(t *testing.T) {
	for _, tt := range []struct{ name, server string }{
		{"pg-advisory", "{idle_session_timeout: 300ms}"},
		{"pg-advisory-xact", "{idle_in_transaction_session_timeout: 300ms}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startDB(t, tt.name, tt.server)
			a, b := s.lock("a"), s.lock("b")
			if _, err := acquire(a, 10*time.Second); err != nil { // a first connection, to a loaded server
				t.Fatal(err)
			}
			// a idles past the limit; the server ends its session when it gets round to it (a loaded
			// machine's backend late by hundreds of milliseconds), and b takes the lock then.
			time.Sleep(600 * time.Millisecond)
			if _, err := acquireSoon(b, 10*time.Second); err != nil {
				t.Fatalf("b, 10 s after a's session passed the server's idle limit: %v", err)
			}
			if err := release(a); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("a's release: %v; want ErrNotHeld", err)
			}
		})
	}
}

func deref(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// yamlNode is a scenario's `server:` block.
func yamlNode(t testing.TB, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil || len(doc.Content) != 1 {
		t.Fatalf("server block %q: %v", src, err)
	}
	return doc.Content[0]
}
