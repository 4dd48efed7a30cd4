package locks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
)

// The lock-client protocol's client against small scripted programs (real processes): what it
// does with good answers, program points, and each way a program can misbehave. The adapters for
// real libraries are tested against real servers in runner/byol_test.go.

// script writes a Python program that answers init with ok (valid: true) and then runs handle
// (Python statements, with req the request and say(dict) to answer it) for every request.
func script(t *testing.T, handle string) []string {
	t.Helper()
	src := `import json, sys
def say(d, req=None):
    sys.stdout.write(json.dumps(d) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "init":
        say({"in_reply_to": req["id"], "type": "ok", "valid": True}); continue
    if req["type"] == "close":
        say({"in_reply_to": req["id"], "type": "ok"}); break
` + indent(handle)
	path := filepath.Join(t.TempDir(), "prog.py")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"/usr/bin/python3", path}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

func startScript(t *testing.T, cmd []string, points *[]string) *external {
	t.Helper()
	env := Env{Client: "client-1", Nodes: []string{"127.0.0.1:1"}, Key: "k", TTL: time.Second, Timeout: 200 * time.Millisecond,
		Point: func(name string) {
			if points != nil {
				*points = append(*points, name)
			}
		}}
	l, err := StartProgram("test", cmd, "", nil, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	switch x := l.(type) {
	case externalValid:
		return x.external
	case *external:
		return x
	}
	t.Fatalf("StartProgram returned %T", l)
	return nil
}

// gone waits for the program to be reaped and checks no process of that pid is left.
func gone(t *testing.T, x *external) {
	t.Helper()
	pid := x.cmd.Process.Pid
	select {
	case <-x.exit:
	case <-time.After(5 * time.Second):
		t.Fatalf("program %d still running", pid)
	}
	if st, err := proc.StateOf(pid); err == nil {
		t.Fatalf("program %d still exists (state %c)", pid, st)
	}
}

func ctxFor(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released when it expires
	return ctx
}

func TestExternalProgramAnswersMapToTheLockInterface(t *testing.T) {
	var points []string
	x := startScript(t, script(t, `
if req["type"] == "acquire":
    say({"type": "point", "name": "between-a-and-b"})
    assert json.loads(sys.stdin.readline())["type"] == "continue"
    tries = globals().get("tries", 0) + 1; globals()["tries"] = tries
    if tries == 1:
        say({"in_reply_to": req["id"], "type": "ok", "token": 42, "value": "v-%d" % req["timeout_ms"], "role": "read"})
    else:
        say({"in_reply_to": req["id"], "type": "fail", "error": "busy"})
elif req["type"] == "release":
    say({"in_reply_to": req["id"], "type": "fail", "error": "not ours"})
elif req["type"] == "valid":
    say({"in_reply_to": req["id"], "type": "fail" if globals().get("tries", 0) > 1 else "ok"})
`), &points)
	x.env.Role = WriteRole // a writer of a read/write lock, whose acquire may be granted the read side
	var l Lock = externalValid{x}
	tok, err := l.Acquire(ctxFor(time.Second))
	if err != nil || tok == nil || *tok != 42 {
		t.Fatalf("acquire: token %v, err %v; want 42", tok, err)
	}
	if v := ValueOf(l); !strings.HasPrefix(v, "v-") {
		t.Fatalf("value %q: want the program's", v)
	}
	if r := HeldRole(l, WriteRole); r != ReadRole {
		t.Fatalf("held role %q: want the side the program said it was granted (read)", r)
	}
	if got := strings.Join(points, ","); got != "between-a-and-b" {
		t.Fatalf("points passed: %q", got)
	}
	if until := l.(Expiring).ValidUntil(); !until.IsZero() {
		t.Fatalf("valid ok: want no end, got %v", until)
	}
	if _, err := l.Acquire(ctxFor(time.Second)); !errors.Is(err, ErrBusy) {
		t.Fatalf("acquire answered fail: want ErrBusy, got %v", err)
	}
	if until := l.(Expiring).ValidUntil(); until.IsZero() || until.After(time.Now()) {
		t.Fatalf("valid fail: want a past time, got %v", until)
	}
	if err := l.Release(ctxFor(time.Second)); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release answered fail: want ErrNotHeld, got %v", err)
	}
	if x.Broken() != nil {
		t.Fatalf("a well-behaved program was marked broken: %v", x.Broken())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	gone(t, x)
}

func TestExternalProgramWithoutValidIsNotExpiring(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.py")
	os.WriteFile(path, []byte(`import json, sys
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.write(json.dumps({"in_reply_to": req["id"], "type": "ok"}) + "\n"); sys.stdout.flush()
`), 0o644)
	l, err := StartProgram("test", []string{"/usr/bin/python3", path}, "", nil, Env{Key: "k", Timeout: time.Second, Point: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, ok := l.(Expiring); ok {
		t.Fatal("a program that did not offer valid must not be Expiring")
	}
	if tok, err := l.Acquire(ctxFor(time.Second)); err != nil || tok != nil {
		t.Fatalf("acquire: token %v err %v; want no token, no error", tok, err)
	}
}

// Each way a program can misbehave is reported with the line it was sent (and its last words on
// stderr), breaks it for good, and leaves no process behind.
func TestMisbehavingProgramsAreReportedAndEnded(t *testing.T) {
	defer func(g time.Duration) { programGrace = g }(programGrace)
	programGrace = 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		handle string
		want   []string
	}{
		{"garbage", `print("hello from the library"); sys.stdout.flush()`,
			[]string{`answered "hello from the library" to {"id":2,"type":"acquire"`, "not a JSON object"}},
		{"wrong type", `say({"in_reply_to": req["id"], "type": "maybe"})`,
			[]string{`{\"in_reply_to\": 2, \"type\": \"maybe\"}`, "type must be ok, fail, error or point"}},
		{"wrong id", `say({"in_reply_to": 7, "type": "ok"})`,
			[]string{"in_reply_to must be 2"}},
		{"unknown role", `say({"in_reply_to": req["id"], "type": "ok", "role": "reader"})`,
			[]string{`answered acquire with role "reader": it must be "read" or "write"`}},
		{"role of a mutex", `say({"in_reply_to": req["id"], "type": "ok", "role": "read"})`,
			[]string{`answered acquire with role "read", but its clients have no role`}},
		{"silent", `import time; time.sleep(60)`,
			[]string{`did not answer {"id":2,"type":"acquire","timeout_ms":`, "within its timeout and 300ms more"}},
		{"crash", `sys.stderr.write("Traceback: KeyError 'token'\n"); sys.exit(3)`,
			[]string{`exited while answering {"id":2,"type":"acquire"`, "exit status 3", "KeyError 'token'"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := startScript(t, script(t, c.handle), nil)
			started := time.Now()
			_, err := x.Acquire(ctxFor(300 * time.Millisecond))
			if !errors.Is(err, ErrBroken) {
				t.Fatalf("want ErrBroken, got %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if c.name == "silent" && time.Since(started) < 550*time.Millisecond {
				t.Errorf("a silent program was given up after %v: before its timeout and grace", time.Since(started))
			}
			if !errors.Is(x.Broken(), ErrBroken) {
				t.Errorf("Broken() = %v after the failure", x.Broken())
			}
			if err := x.Release(ctxFor(time.Second)); !errors.Is(err, ErrBroken) {
				t.Errorf("a broken program's next call: want ErrBroken, got %v", err)
			}
			gone(t, x)
		})
	}
}

func TestProgramThatCannotStartSaysWhy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.py")
	os.WriteFile(path, []byte("import sys\nsys.exit(\"this adapter needs libfoo: install python3-foo\")\n"), 0o644)
	_, err := StartProgram("foo", []string{"/usr/bin/python3", path}, "", nil, Env{Key: "k", Timeout: time.Second, Point: func(string) {}})
	if !errors.Is(err, ErrBroken) {
		t.Fatalf("want ErrBroken, got %v", err)
	}
	for _, w := range []string{`exited while answering {"id":1,"type":"init","client":""`, "exit status 1", "install python3-foo"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if _, err := StartProgram("foo", []string{"/no/such/program"}, "", nil, Env{Point: func(string) {}}); err == nil ||
		!strings.Contains(err.Error(), "/no/such/program") {
		t.Fatalf("a missing program: want an error naming it, got %v", err)
	}
}

func TestSilentProgramAtInitIsGivenUp(t *testing.T) {
	defer func(s, g time.Duration) { programStartTimeout, programGrace = s, g }(programStartTimeout, programGrace)
	programStartTimeout, programGrace = 300*time.Millisecond, 200*time.Millisecond
	path := filepath.Join(t.TempDir(), "p.py")
	os.WriteFile(path, []byte("import time\ntime.sleep(60)\n"), 0o644)
	_, err := StartProgram("slow", []string{"/usr/bin/python3", path}, "", nil, Env{Key: "k", Point: func(string) {}})
	if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), `did not answer {"id":1,"type":"init"`) {
		t.Fatalf("want a broken program that did not answer init, got %v", err)
	}
	if pids := proc.Mentioning(path); len(pids) > 0 {
		time.Sleep(500 * time.Millisecond) // the kill is sent; give the reaper a moment
		if pids := proc.Mentioning(path); len(pids) > 0 {
			t.Fatalf("the silent program is still running: %v", pids)
		}
	}
}

// A design file that says its hold lives with its connection (a database session's lock) records
// that rule, so that a cut of the holder's links ends its promise; one that does not, does not.
func TestAConnectionBoundDesignFileRecordsItsRule(t *testing.T) {
	no := false
	for _, connection := range []bool{true, false} {
		d := ExternalDesign(Program{Name: "mine", Command: []string{"./mine"}, Service: "mariadb", Expires: &no, Connection: connection})
		r := d.PromiseRule(Env{})
		if r.Connection != connection || strings.Contains(r.Words, "connection") != connection {
			t.Errorf("connection: %v: rule %+v", connection, r)
		}
	}
}
