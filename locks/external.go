package locks

// external.go: a lock design that is a program of its own, in any language, which the worker
// starts as its child and talks to over the program's stdin and stdout, one JSON object per line
// (the lock-client protocol, docs/LOCK-PROTOCOL.md). The worker asks (init, acquire, release,
// valid, close); the program answers ok, fail or error, with its fencing token and lock value if
// it has them, and may stop at program points it names. Everything else a run does — resource
// accesses, history, checking — is the worker's, exactly as for a built-in design.
//
// The program runs in the worker's process group with a parent-death signal: the nemesis's
// SIGSTOP or SIGKILL of a client reaches both, and the program dies if the worker dies alone. A
// program that exits, answers something that is not the protocol, or does not answer in time is
// broken for good (ErrBroken): the operation in flight has an unknown outcome, and the worker
// reports the program's failure, with the line it was sent and its last lines of stderr.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
)

// Program defines an external design: the command that runs it and what the design is. A
// scenario gives it inline (`lock: {command: [...], service: redis, nodes: 1, token: none}`) or
// in a design file; the worker gets it in its config.
type Program struct {
	Name    string   `json:"name" yaml:"name"` // how reports name the design (default: the program's file name)
	Summary string   `json:"summary,omitempty" yaml:"summary"`
	Command []string `json:"command" yaml:"command"`           // the program and its arguments
	Dir     string   `json:"dir,omitempty" yaml:"dir"`         // its working directory (default: the folder of the file naming it)
	Service string   `json:"service,omitempty" yaml:"service"` // the kind of lock service (default redis)
	Nodes   int      `json:"nodes,omitempty" yaml:"nodes"`     // lock nodes it uses (default 1)
	Token   string   `json:"token,omitempty" yaml:"token"`     // the fencing token it hands out, or "none"
	Expires *bool    `json:"expires,omitempty" yaml:"expires"` // a lease (needs a ttl); default true
	// Connection: a hold lasts only while the client's connection to the server does (a database
	// session's lock: GET_LOCK, an advisory lock), so a cut of the client's links ends its promise.
	Connection bool     `json:"connection,omitempty" yaml:"connection"`
	Points     []string `json:"points,omitempty" yaml:"points"` // program points it announces
	// Usage lists the usage steps it offers beyond those every design does (locks.UsageSteps:
	// reenter when the lock is reentrant, abandon when the program gives up an attempt it is told
	// to).
	Usage []string `json:"usage,omitempty" yaml:"usage"`
	// Go, instead of Command, is a Go adapter of the user's that lockcheck builds against a
	// library at a version (gosource.go).
	Go *GoSource `json:"go,omitempty" yaml:"go"`
}

// ExternalDesign is the design p defines: its New starts the program.
func ExternalDesign(p Program) Design {
	d := Design{
		Name:      p.Name,
		Summary:   p.Summary,
		Source:    "external program: " + strings.Join(p.Command, " "),
		Token:     p.Token,
		Nodes:     p.Nodes,
		Expires:   p.Expires == nil || *p.Expires,
		Service:   p.Service,
		Points:    p.Points,
		Usage:     p.Usage,
		Reentrant: slices.Contains(p.Usage, UsageReenter),
		Protects:  "what its program does (an external design: the run tells)",
		FailureModes: []string{
			"unknown until checked: run it under the K2 and K3 scenarios",
		},
		External: true,
		Program:  &p,
		Promise:  Promise{Connection: p.Connection},
		New: func(env Env) (Lock, error) {
			return StartProgram(p.Name, p.Command, p.Dir, nil, env)
		},
	}
	if p.Go != nil {
		p.Go.design(&d, p)
	}
	if d.Token == "" {
		d.Token = "none"
	}
	if d.Nodes == 0 {
		d.Nodes = 1
	}
	if d.Summary == "" {
		d.Summary = "an external lock program"
	}
	return d
}

// ErrBroken marks a lock program that broke the protocol: it exited, answered something else, or
// did not answer in time. It is final: every later call fails with it too.
var ErrBroken = errors.New("lock program broken")

// Breakable is implemented by designs that can fail for good (an external program that died):
// Broken says why, or nil. The worker stops and reports it rather than go on with a dead client.
type Breakable interface {
	Broken() error
}

// How long a program may take, set as variables so tests can shorten them.
var (
	// programStartTimeout bounds the answer to init: a JVM and its library may take seconds to
	// start on a busy machine.
	programStartTimeout = 30 * time.Second
	// programGrace is how long past an operation's deadline a program may still answer. It
	// starts when the deadline is seen to pass, so a client frozen with its program (SIGSTOP of
	// the group) gets the whole grace after it resumes.
	programGrace = 10 * time.Second
)

// request is one line to the program.
type request struct {
	ID        int64  `json:"id,omitempty"`
	Type      string `json:"type"`
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
}

// initRequest is the first line: everything the program needs to build its client.
type initRequest struct {
	ID        int64             `json:"id"`
	Type      string            `json:"type"`
	Client    string            `json:"client"`
	Nodes     []string          `json:"nodes"`
	Lock      string            `json:"lock"`
	TTLMS     int64             `json:"ttl_ms"`
	TimeoutMS int64             `json:"timeout_ms"`
	Params    map[string]string `json:"params,omitempty"`
	Role      string            `json:"role,omitempty"`
}

// reply is one line from the program: an answer (ok, fail, error), a program point, or a
// renewal its lock made on its own.
type reply struct {
	Type      string `json:"type"`
	InReplyTo *int64 `json:"in_reply_to"`
	Token     *int64 `json:"token"`
	Value     string `json:"value"`
	Error     string `json:"error"`
	Name      string `json:"name"`  // a point's name
	Valid     bool   `json:"valid"` // init: the program answers valid requests
	Role      string `json:"role"`  // acquire of a read/write lock: the side granted, when not the client's role
	// Session names the lease or session a hold lives on (acquire), or a renewal renewed.
	Session string `json:"session"`
	// AskedNS is when the request the answer speaks for was sent (CLOCK_MONOTONIC nanoseconds):
	// the request that got the lock (acquire), or a renewal's. AnsweredNS is when a renewal's
	// answer came.
	AskedNS    int64 `json:"asked_ns"`
	AnsweredNS int64 `json:"answered_ns"`
	// Renewed: a valid answer that asked the servers and renewed the lease (its yes is a promise).
	Renewed bool  `json:"renewed"`
	OK      bool  `json:"ok"`       // a renewal: the servers said yes
	LeaseMS int64 `json:"lease_ms"` // a renewal: how long it lasts, when the servers said
	// Usage: init: the usage steps the program takes that need it (abandon: it gives up an
	// attempt when told).
	Usage []string `json:"usage"`
}

// external is one client's handle on its lock program.
type external struct {
	env    Env
	label  string // the design and its command, for messages
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte   // stdout, line by line
	exit   chan struct{} // closed once the program has exited and been reaped
	stderr *tailWriter

	waitErr error // set before exit closes

	mu      sync.Mutex // one request at a time
	id      int64
	broken  error
	value   string
	role    string // the side of a read/write lock the last acquire was granted ("": the client's role)
	asked   int64  // when the request behind the last acquire's yes was sent, if the program said
	session string // the lease or session the last acquire's hold lives on, if the program said
	renewed bool   // the last valid answer asked the servers and renewed the lease
	// abandons: the program said at init that it gives up an acquire attempt when told (usage
	// step abandon): an abandon line while the attempt waits, or a continue that says so.
	abandons bool

	closeWait time.Duration // how long Close waits for the program to exit (0: 2 s)
}

// externalValid is an external lock whose program answers valid requests.
type externalValid struct{ *external }

// StartProgram starts command (in dir, with extraEnv added to ours) as env's lock program and
// sends it init. name is the design's, for messages. The program's stderr goes to ours.
func StartProgram(name string, command []string, dir string, extraEnv []string, env Env) (Lock, error) {
	x, valid, err := startProgram(name, command, dir, extraEnv, env)
	switch {
	case err != nil:
		return nil, err
	case valid:
		return externalValid{x}, nil
	default:
		return x, nil
	}
}

// startProgram is StartProgram, with whether the program answers valid requests.
func startProgram(name string, command []string, dir string, extraEnv []string, env Env) (*external, bool, error) {
	if len(command) == 0 {
		return nil, false, fmt.Errorf("lock program of %s: no command", name)
	}
	if env.Sentinel != nil {
		return nil, false, fmt.Errorf("lock program of %s: external designs do not follow Redis Sentinel", name)
	}
	x := &external{
		env:    env,
		label:  fmt.Sprintf("%s (%s)", name, strings.Join(command, " ")),
		lines:  make(chan []byte, 64),
		exit:   make(chan struct{}),
		stderr: &tailWriter{w: os.Stderr},
	}
	x.cmd = exec.Command(command[0], command[1:]...)
	x.cmd.Dir = dir
	x.cmd.Env = append(os.Environ(), extraEnv...)
	x.cmd.Stderr = x.stderr
	x.cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr open must not hang Wait
	stdin, err := x.cmd.StdinPipe()
	if err != nil {
		return nil, false, err
	}
	stdout, err := x.cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	x.stdin = stdin
	// In our process group, so a pause or kill of the client reaches it; dies if we die.
	if err := proc.StartInGroup(x.cmd); err != nil {
		return nil, false, fmt.Errorf("lock program %s: start: %w", x.label, err)
	}
	go x.read(stdout)

	r, err := x.call(nil, initRequest{Type: "init", Client: env.Client, Nodes: env.Nodes, Lock: env.Key,
		TTLMS: env.TTL.Milliseconds(), TimeoutMS: env.Timeout.Milliseconds(), Params: env.Params, Role: env.Role},
		time.Now().Add(programStartTimeout), programGrace)
	if err == nil && r.Type != "ok" {
		err = x.fail("answered init with %s: %s", r.Type, r.Error)
	}
	if err != nil {
		x.kill()
		return nil, false, err
	}
	x.abandons = slices.Contains(r.Usage, UsageAbandon)
	return x, r.Valid, nil
}

// read passes the program's stdout on line by line, then reaps it. A renewal the program reports
// on its own, between answers or amid one, is recorded at once and not passed on.
func (x *external) read(stdout io.Reader) {
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		line := lines.Bytes()
		if bytes.Contains(line, []byte(`"renewed"`)) {
			var r reply
			if json.Unmarshal(line, &r) == nil && r.Type == "renewed" {
				x.env.Renewed(Renewal{Asked: r.AskedNS, Answered: max(r.AnsweredNS, r.AskedNS), OK: r.OK, Session: r.Session,
					Error: r.Error, Lease: time.Duration(r.LeaseMS) * time.Millisecond})
				continue
			}
		}
		x.lines <- append([]byte(nil), line...)
	}
	x.waitErr = x.cmd.Wait()
	close(x.exit)
}

// call sends req and waits for its answer until deadline (plus grace), stopping at the program
// points the program announces meanwhile. Any failure of the program breaks it. An acquire's
// ctx, cancelled before its deadline (the usage step abandon), is passed on to a program that
// gives up attempts: at once while it waits, or in the continue of the point it stopped at, so
// that the program gives up before it goes on from there. ctx may be nil.
func (x *external) call(ctx context.Context, req any, deadline time.Time, grace time.Duration) (reply, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.broken != nil {
		return reply{}, x.broken
	}
	x.id++
	id := x.id
	switch r := req.(type) {
	case request:
		r.ID = id
		req = r
	case initRequest:
		r.ID = id
		req = r
	}
	line, err := json.Marshal(req)
	if err != nil {
		return reply{}, err
	}
	if err := x.send(line); err != nil {
		return reply{}, x.failExited("could not be sent %s (%v)", line, err)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	late := false
	var abandoned <-chan struct{} // ends when the caller gave the attempt up, for a program that gives up
	if ctx != nil && x.abandons {
		abandoned = ctx.Done()
	}
	given := func() bool { return abandoned != nil && errors.Is(ctx.Err(), context.Canceled) }
	for {
		var got []byte
		select {
		case <-abandoned:
			abandoned = nil // told once; the answer still comes
			if given() {
				if err := x.send([]byte(`{"type":"abandon"}`)); err != nil {
					return reply{}, x.failExited("could not be told to abandon %s (%v)", line, err)
				}
			}
			continue
		case got = <-x.lines:
		case <-x.exit:
			select {
			case got = <-x.lines: // it answered, then exited: the answer counts
			default:
				return reply{}, x.failExited("exited while answering %s", line)
			}
		case <-timer.C:
			if !late && grace > 0 {
				late = true
				timer.Reset(grace)
				continue
			}
			return reply{}, x.fail("did not answer %s within its timeout and %s more", line, grace)
		}
		var r reply
		if err := json.Unmarshal(got, &r); err != nil {
			return reply{}, x.fail("answered %q to %s: not a JSON object (write logs to stderr, never to stdout)", got, line)
		}
		switch r.Type {
		case "point":
			if r.Name == "" {
				return reply{}, x.fail("announced a point without a name (%q) while answering %s", got, line)
			}
			x.env.Point(r.Name) // may stop the whole client here, program included
			cont := []byte(`{"type":"continue"}`)
			if given() {
				cont, abandoned = []byte(`{"type":"continue","abandon":true}`), nil
			}
			if err := x.send(cont); err != nil {
				return reply{}, x.failExited("could not be told to continue after point %s (%v)", r.Name, err)
			}
		case "ok", "fail", "error":
			if r.InReplyTo == nil || *r.InReplyTo != id {
				return reply{}, x.fail("answered %q to %s: in_reply_to must be %d", got, line, id)
			}
			return r, nil
		default:
			return reply{}, x.fail("answered %q to %s: type must be ok, fail, error or point", got, line)
		}
	}
}

func (x *external) send(line []byte) error {
	_, err := x.stdin.Write(append(line, '\n'))
	return err
}

// fail breaks the program for good, with what went wrong and its last lines of stderr, and
// kills it. x.mu is held.
func (x *external) fail(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if tail := x.stderr.Tail(); tail != "" {
		msg += "; its last stderr lines: " + tail
	}
	x.broken = fmt.Errorf("%w: %s %s", ErrBroken, x.label, msg)
	x.kill()
	return x.broken
}

// failExited is fail for a program that is gone (or going): it waits briefly for the exit
// status, which says more than a broken pipe.
func (x *external) failExited(format string, a ...any) error {
	select {
	case <-x.exit:
	case <-time.After(time.Second):
	}
	select {
	case <-x.exit:
		status := "exit status 0"
		if x.waitErr != nil {
			status = x.waitErr.Error()
		}
		return x.fail(format+" (it exited: %s)", append(a, status)...)
	default:
		return x.fail(format, a...)
	}
}

// kill ends the program (only it: the rest of the group is the worker's).
func (x *external) kill() {
	select {
	case <-x.exit:
	default:
		_ = x.cmd.Process.Kill()
	}
}

// op runs one request bounded by ctx (or a few command timeouts when ctx has no deadline).
func (x *external) op(ctx context.Context, typ string) (reply, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(4 * x.env.Timeout)
	}
	ms := max(time.Until(deadline).Milliseconds(), 1)
	if typ != "acquire" {
		ctx = nil // only an acquire attempt is ever given up
	}
	return x.call(ctx, request{Type: typ, TimeoutMS: &ms}, deadline, programGrace)
}

func (x *external) Acquire(ctx context.Context) (*int64, error) {
	r, err := x.op(ctx, "acquire")
	switch {
	case err != nil:
		return nil, err
	case r.Type == "ok" && r.Role != "" && r.Role != ReadRole && r.Role != WriteRole:
		return nil, x.brokenBy("answered acquire with role %q: it must be %q or %q", r.Role, ReadRole, WriteRole)
	case r.Type == "ok" && r.Role != "" && x.env.Role == "":
		// A plain mutex's hold called "read" would be shared in the checker's eyes.
		return nil, x.brokenBy("answered acquire with role %q, but its clients have no role: the design is not a read/write lock", r.Role)
	case r.Type == "ok":
		x.value, x.role, x.asked, x.session = r.Value, r.Role, r.AskedNS, r.Session
		return r.Token, nil
	case r.Type == "fail":
		return nil, fmt.Errorf("%w (%s)", ErrBusy, orNothing(r.Error))
	default:
		return nil, fmt.Errorf("lock program: acquire: %s", orNothing(r.Error))
	}
}

func (x *external) Release(ctx context.Context) error {
	r, err := x.op(ctx, "release")
	switch {
	case err != nil:
		return err
	case r.Type == "ok":
		return nil
	case r.Type == "fail":
		return fmt.Errorf("%w (%s)", ErrNotHeld, orNothing(r.Error))
	default:
		return fmt.Errorf("lock program: release: %s", orNothing(r.Error))
	}
}

// ValidUntil asks the program whether it still believes it holds the lock: the zero time (no
// known end) if so; otherwise, or if it cannot tell, a time long past, so the worker does not
// write.
func (e externalValid) ValidUntil() time.Time {
	r, err := e.op(context.Background(), "valid")
	e.renewed = err == nil && r.Type == "ok" && r.Renewed
	if err == nil && r.Type == "ok" {
		return time.Time{}
	}
	// Said in the client's log: the history records only that the client stopped believing.
	why := orNothing(r.Error)
	if err != nil {
		why = err.Error()
	}
	fmt.Fprintf(e.stderr.w, "lockcheck: %s: valid: %s: %s\n", e.label, r.Type, why)
	return time.Unix(0, 1)
}

// Promised is what the program said of its last acquire's yes: when the request behind it was
// sent, and the lease or session the hold lives on.
func (x *external) Promised() (int64, string) { return x.asked, x.session }

// CheckAsked reports whether the last valid answer asked the servers and renewed the lease.
func (x *external) CheckAsked() bool { return x.renewed }

// Value is the lock value the program gave with its last acquire ("" if none).
func (x *external) Value() string { return x.value }

// HeldRole is the side of a read/write lock the program said its last acquire was granted.
func (x *external) HeldRole() string { return x.role }

// brokenBy breaks the program for an answer that breaks the protocol, outside a call.
func (x *external) brokenBy(format string, a ...any) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.fail(format, a...)
}

// Broken says why the program broke, or nil.
func (x *external) Broken() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.broken
}

// Close asks the program to close, closes its stdin, and kills it if it has not exited soon
// after.
func (x *external) Close() error {
	x.mu.Lock()
	broken := x.broken
	x.mu.Unlock()
	if broken == nil {
		_, _ = x.call(nil, request{Type: "close"}, time.Now().Add(time.Second), 0)
	}
	_ = x.stdin.Close()
	wait := x.closeWait
	if wait == 0 {
		wait = 2 * time.Second
	}
	select {
	case <-x.exit:
	case <-time.After(wait):
		x.kill()
		<-x.exit
	}
	return nil
}

func orNothing(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// tailWriter passes the program's stderr on and keeps its last lines for error messages.
type tailWriter struct {
	w io.Writer

	mu      sync.Mutex
	partial []byte
	last    []string
}

const tailLines = 5

func (t *tailWriter) Write(b []byte) (int, error) {
	_, _ = t.w.Write(b)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(t.partial[:i])); line != "" {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			t.last = append(t.last, line)
			if len(t.last) > tailLines {
				t.last = t.last[1:]
			}
		}
		t.partial = t.partial[i+1:]
	}
	return len(b), nil
}

// Tail is the last few lines written, joined by " | ".
func (t *tailWriter) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.last
	if p := strings.TrimSpace(string(t.partial)); p != "" {
		last = append(append([]string(nil), last...), p)
	}
	return strings.Join(last, " | ")
}
