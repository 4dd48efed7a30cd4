package main

// lockproto.go: lockcheck's lock-client protocol (docs/LOCK-PROTOCOL.md) for the Go adapters, with
// the standard library only. lockcheck builds each adapter at a library version of the user's
// choice: this file and the adapter's own files become package main of a throwaway module whose
// go.mod requires that version (package adapters, golib.go). They are never compiled into
// lockcheck itself (the go tool skips folders whose name starts with "_").
//
// The worker writes one JSON request per line on stdin; serve answers each with one line on
// stdout. Logs go to stderr, which the worker keeps in the client's log.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// initRequest is the first request: everything a client needs to build its lock.
type initRequest struct {
	Client    string            `json:"client"`
	Nodes     []string          `json:"nodes"`
	Lock      string            `json:"lock"`
	TTLMS     int64             `json:"ttl_ms"`
	TimeoutMS int64             `json:"timeout_ms"`
	Params    map[string]string `json:"params"`
	Role      string            `json:"role"`
}

func (r initRequest) ttl() time.Duration     { return time.Duration(r.TTLMS) * time.Millisecond }
func (r initRequest) timeout() time.Duration { return time.Duration(r.TimeoutMS) * time.Millisecond }

// request is any request; init's fields are read from the same line.
type request struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// answer is one reply: ok (the operation took effect), fail (it certainly did not: busy, or not
// held) or error (its outcome is unknown).
type answer struct {
	InReplyTo int64  `json:"in_reply_to"`
	Type      string `json:"type"`
	Token     *int64 `json:"token,omitempty"`
	Value     string `json:"value,omitempty"`
	Error     string `json:"error,omitempty"`
	Valid     bool   `json:"valid,omitempty"` // init: this adapter answers valid requests
	// Session names the lease or session the hold lives on (acquire).
	Session string `json:"session,omitempty"`
	// Renewed: the valid answer asked the servers and renewed the lease.
	Renewed bool `json:"renewed,omitempty"`
	// Usage: init: the usage steps this adapter takes (usageOffer).
	Usage []string `json:"usage,omitempty"`
}

// renewal is a line the adapter writes on its own: a renewal its library made (a keep-alive, a
// session's request answered), with CLOCK_MONOTONIC times.
type renewal struct {
	Type       string `json:"type"` // "renewed"
	AskedNS    int64  `json:"asked_ns"`
	AnsweredNS int64  `json:"answered_ns"`
	OK         bool   `json:"ok"`
	Session    string `json:"session,omitempty"`
	LeaseMS    int64  `json:"lease_ms,omitempty"`
}

// out is the protocol's stdout, one JSON object per line; answers, points and renewals come
// from several goroutines. The program's own fd 1 is pointed at stderr before main runs, so that
// a library that prints to stdout writes to the client's log, not into the protocol.
var (
	outMu sync.Mutex
	out   = json.NewEncoder(protocolStdout())
)

// protocolStdout keeps the real stdout for the protocol and sends everything else written to
// fd 1 (a library's prints, fmt.Println in the adapter) to stderr.
func protocolStdout() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		return os.Stdout
	}
	if syscall.Dup3(2, 1, 0) != nil {
		return os.NewFile(uintptr(fd), "protocol")
	}
	protocol := os.NewFile(uintptr(fd), "protocol")
	os.Stdout = os.Stderr
	return protocol
}

func write(v any) error {
	outMu.Lock()
	defer outMu.Unlock()
	return out.Encode(v)
}

// reportRenewal tells the worker of a renewal (renewals_*.go call it).
func reportRenewal(asked, answered int64, ok bool, session string, lease time.Duration) {
	_ = write(renewal{Type: "renewed", AskedNS: asked, AnsweredNS: answered, OK: ok, Session: session, LeaseMS: lease.Milliseconds()})
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock lockcheck's history keeps.
func monotonicNow() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}

func ok() answer                         { return answer{Type: "ok"} }
func renewed() answer                    { return answer{Type: "ok", Renewed: true} } // valid: the servers renewed the lease
func okToken(t int64) answer             { return answer{Type: "ok", Token: &t} }
func fail(why string) answer             { return answer{Type: "fail", Error: why} }
func unknown(err error) answer           { return answer{Type: "error", Error: err.Error()} }
func unknownf(f string, a ...any) answer { return answer{Type: "error", Error: fmt.Sprintf(f, a...)} }

// lockClient is one client's lock, as an adapter builds it from the init request. acquire and
// release are given the time they must answer within.
type lockClient interface {
	acquire(within time.Duration) answer
	release(within time.Duration) answer
	close()
}

// validator is a lockClient that can tell whether it still believes it holds the lock (the
// workload asks before each access to the resource).
type validator interface {
	valid(within time.Duration) answer
}

// usageOffer is a lockClient that says which usage steps it takes beyond acquire and release
// (abandon: its acquire gives up when the kit's attempt context ends, attemptContext).
type usageOffer interface {
	usage() []string
}

// inbound is stdin, read by one goroutine: requests go to serve, the continue after a point to
// the point that waits for it, and an abandon gives up the attempt in flight at once.
var (
	requests  = make(chan []byte)
	continues = make(chan []byte)
)

// attempt is the acquire in flight: its context (attemptContext), given up by an abandon.
var attempt struct {
	sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	running bool
}

// attemptContext is the context of the acquire in flight: the kit cancels it when lockcheck
// gives the attempt up (usage step abandon), as a caller's own context ending would. An adapter
// that offers abandon passes it (or one made from it) to the library's acquire.
func attemptContext() context.Context {
	attempt.Lock()
	defer attempt.Unlock()
	if attempt.ctx == nil {
		return context.Background()
	}
	return attempt.ctx
}

func beginAttempt() {
	attempt.Lock()
	defer attempt.Unlock()
	// The last attempt's context stays live until now: its library call may still be finishing
	// (an adapter abandons and undoes it on its own).
	if attempt.cancel != nil {
		attempt.cancel()
	}
	attempt.ctx, attempt.cancel = context.WithCancel(context.Background())
	attempt.running = true
}

func endAttempt() {
	attempt.Lock()
	defer attempt.Unlock()
	attempt.running = false
}

func abandonAttempt() {
	attempt.Lock()
	defer attempt.Unlock()
	if attempt.running && attempt.cancel != nil {
		attempt.cancel()
	}
}

var pointMu sync.Mutex // one point at a time: each waits for its own continue

// point announces a program point of an acquire in flight and waits until lockcheck lets the
// client go on: it may stop the whole client there (a pause at the point), or give the attempt up
// first (the continue says abandon), so that the library goes on from the point already told.
// Outside an acquire it does nothing. Call it from the goroutine whose next step the point is.
func point(name string) {
	attempt.Lock()
	running := attempt.running
	attempt.Unlock()
	if !running {
		return
	}
	pointMu.Lock()
	defer pointMu.Unlock()
	if write(map[string]string{"type": "point", "name": name}) != nil {
		return
	}
	var c struct {
		Abandon bool `json:"abandon"`
	}
	line, ok := <-continues
	if ok && json.Unmarshal(line, &c) == nil && c.Abandon {
		abandonAttempt()
	}
}

// readInput sorts stdin's lines until it closes.
func readInput() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 1024*1024)
	for in.Scan() {
		line := append([]byte(nil), in.Bytes()...)
		var kind struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(line, &kind)
		switch kind.Type {
		case "continue":
			continues <- line
		case "abandon":
			abandonAttempt()
		default:
			requests <- line
		}
	}
	close(requests)
	close(continues)
}

// serve runs the request loop around the client newClient builds at init.
func serve(newClient func(initRequest) (lockClient, error)) {
	go readInput()
	var client lockClient
	for line := range requests {
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fmt.Fprintf(os.Stderr, "lock adapter: not a request: %q\n", line)
			os.Exit(2)
		}
		var a answer
		switch {
		case req.Type == "init":
			var ir initRequest
			if err := json.Unmarshal(line, &ir); err != nil {
				a = unknown(err)
				break
			}
			c, err := newClient(ir)
			if err != nil {
				a = unknown(err)
				break
			}
			client = c
			_, canValidate := c.(validator)
			a = answer{Type: "ok", Valid: canValidate}
			if u, ok := c.(usageOffer); ok {
				a.Usage = u.usage()
			}
		case client == nil:
			a = unknownf("%s before init", req.Type)
		case req.Type == "acquire":
			beginAttempt()
			a = client.acquire(within(req))
			endAttempt()
		case req.Type == "release":
			a = client.release(within(req))
		case req.Type == "valid":
			if v, canValidate := client.(validator); canValidate {
				a = v.valid(within(req))
			} else {
				a = fail("this adapter does not answer valid")
			}
		case req.Type == "close":
			client.close()
			a = ok()
		default:
			a = unknownf("unknown request type %q", req.Type)
		}
		a.InReplyTo = req.ID
		if err := write(a); err != nil {
			os.Exit(2) // the worker is gone
		}
		if req.Type == "close" {
			return
		}
	}
}

// within is the time a request may take: its timeout_ms, or 10 s when it gives none.
func within(req request) time.Duration {
	if req.TimeoutMS <= 0 {
		return 10 * time.Second
	}
	return time.Duration(req.TimeoutMS) * time.Millisecond
}

// logf writes one line to the client's log.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "lock adapter: "+format+"\n", a...)
}
