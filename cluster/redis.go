package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/internal/proc"
)

const (
	// startTimeout bounds one redis-server start, from fork to PING answered.
	startTimeout = 10 * time.Second
	// portAttempts is how many fresh ports a first start tries when the one picked was taken.
	portAttempts = 5
)

// errPortInUse means redis-server could not bind its port (someone took it after we picked it).
var errPortInUse = errors.New("port already in use")

// Redis is one redis-server process: a lock node or the protected resource's storage.
type Redis struct {
	Name    string
	Addr    string // 127.0.0.1:port, direct (not through a proxy)
	Dir     string // its data dir; also holds LogFile
	LogFile string

	port        int
	logger      *slog.Logger
	persistence string // one of PersistenceNone, PersistenceAOFEverysec, PersistenceAOFAlways

	// The clock (faketime.go). faketimeFile is the libfaketime timestamp file, "" when the
	// process does not run under libfaketime (the resource; a lock node when noClock says why).
	faketimeFile string
	noClock      error
	clockMu      sync.Mutex   // serialises writes of faketimeFile
	clock        clockSetting // what SetClock last asked for
	procStart    time.Time    // when the current process was started (libfaketime's start time)

	lifecycle // current process, closed flag, restart lock; Process()
}

// Restart starts redis-server again on the same port with the same options, data dir and clock,
// and waits until it answers PING. A process still running is killed first (a crash-restart,
// SIGKILL). Without persistence the data set starts empty; with AOF (lock nodes with
// Options.Persistence) redis-server reloads what reached its AOF file before the kill.
func (r *Redis) Restart(ctx context.Context) error {
	r.restartMu.Lock()
	defer r.restartMu.Unlock()
	if err := r.killAndWait(r.Name); err != nil {
		return err
	}
	// The port is ours by convention but not by lock: if someone took it while the server was
	// down, try a few times before giving up (the proxies point at this port, it cannot move).
	var err error
	for i := 0; i < portAttempts; i++ {
		if err = r.launch(ctx); !errors.Is(err, errPortInUse) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// Persistence modes of lock nodes (Options.Persistence).
const (
	PersistenceNone        = "none"         // no RDB, no AOF: a restart forgets everything
	PersistenceAOFEverysec = "aof-everysec" // AOF, fsync once a second
	PersistenceAOFAlways   = "aof-always"   // AOF, fsync before each reply
)

// PersistenceModes lists the valid Options.Persistence values ("" means PersistenceNone).
var PersistenceModes = []string{PersistenceNone, PersistenceAOFEverysec, PersistenceAOFAlways}

// CheckPersistence says whether p is a valid Options.Persistence, listing the valid ones if not.
func CheckPersistence(p string) error {
	if p == "" {
		return nil
	}
	for _, m := range PersistenceModes {
		if p == m {
			return nil
		}
	}
	return fmt.Errorf("unknown persistence %q; valid: %s (or empty: none)", p, strings.Join(PersistenceModes, ", "))
}

// persistenceArgs are redis-server's options for a persistence mode. RDB snapshots are always off:
// what survives a restart is what the AOF holds, nothing else.
func persistenceArgs(p string) []string {
	switch p {
	case PersistenceAOFEverysec:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	case PersistenceAOFAlways:
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	default:
		return []string{"--save", "", "--appendonly", "no"}
	}
}

// redisConfig is how one server runs.
type redisConfig struct {
	persistence string // "" or a PersistenceModes value
	faketime    bool   // run under libfaketime with a settable clock (lock nodes)
}

// startRedis creates dir and starts a redis-server in it on a free port.
func startRedis(ctx context.Context, name, dir string, logger *slog.Logger, cfg redisConfig) (*Redis, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := CheckPersistence(cfg.persistence); err != nil {
		return nil, fmt.Errorf("redis %s: %w", name, err)
	}
	if cfg.persistence == "" {
		cfg.persistence = PersistenceNone
	}
	r := &Redis{Name: name, Dir: dir, LogFile: filepath.Join(dir, "redis.log"), logger: logger, persistence: cfg.persistence,
		lifecycle: lifecycle{kind: "redis"}}
	if cfg.faketime {
		if err := CheckFaketime(); err != nil {
			r.noClock = err
			logger.Warn("lock node starts without libfaketime: its clock cannot be set", "name", name, "err", err)
		} else {
			r.faketimeFile = filepath.Join(dir, faketimeFileName)
			if err := writeFileAtomic(r.faketimeFile, clockSetting{}.spec(time.Now())); err != nil {
				return nil, fmt.Errorf("redis %s: clock file: %w", name, err)
			}
		}
	}
	var err error
	for i := 0; i < portAttempts; i++ {
		var port int
		if port, err = pickPort(); err != nil {
			return nil, err
		}
		r.port = port
		r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = r.launch(ctx); !errors.Is(err, errPortInUse) {
			break
		}
		logger.Debug("redis port taken, retrying", "name", name, "port", port)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// pickPort is freePort, replaceable by tests.
var pickPort = freePort

// freePort asks the kernel for a free port on 127.0.0.1. It is free when we close the listener,
// not necessarily when redis-server binds it: launch detects that and the caller retries.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts one redis-server process on r.port and waits until it is ready.
func (r *Redis) launch(ctx context.Context) error {
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1"}
	args = append(args, persistenceArgs(r.persistence)...)
	args = append(args, "--daemonize", "no", "--dir", r.Dir, "--logfile", r.LogFile)
	cmd := exec.Command("redis-server", args...)
	cmd.Dir = r.Dir
	var began time.Time
	p, err := r.launchServer(ctx, r.Name, r.Addr, r.LogFile, cmd, func() error {
		if r.faketimeFile != "" {
			// The clock file is written for a process starting now; libfaketime takes its start time
			// a few milliseconds later, which shifts a clock running at rate R by times that.
			r.clockMu.Lock()
			err := r.writeClockFileLocked(time.Now())
			r.clockMu.Unlock()
			if err != nil {
				return err
			}
			cmd.Env = append(os.Environ(), faketimeEnv(r.faketimeFile)...)
		}
		began = time.Now()
		return nil
	})
	if err != nil {
		return err
	}
	r.logger.Debug("redis ready", "name", r.Name, "addr", r.Addr, "pid", p.Pid(), "took", time.Since(began))
	return nil
}

// launchServer starts cmd, a redis-server (plain or --sentinel) called name that listens on addr,
// with its output appended to logFile (whatever it prints before it opens its own log file, bad
// arguments..., lands there too), makes it l's current process and waits until it answers PING
// with its own pid. prepare, if not nil, runs just before the start (it may set cmd.Env); its
// error is returned as is. A port someone else took is errPortInUse, for the caller to retry on
// another port. It fails once l is stopped, and kills a process that started too late.
func (l *lifecycle) launchServer(ctx context.Context, name, addr, logFile string, cmd *exec.Cmd, prepare func() error) (*proc.Process, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s %s: cluster stopped", l.kind, name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	logf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	if prepare != nil {
		if err := prepare(); err != nil {
			logf.Close()
			return nil, err
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.StartProcess(cmd)
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("%s %s: start redis-server: %w", l.kind, name, err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = p.Kill()
		_ = p.Wait()
		return nil, fmt.Errorf("%s %s: cluster stopped", l.kind, name)
	}
	l.p = p
	l.mu.Unlock()

	if err := waitReady(ctx, addr, p); err != nil {
		_ = p.Kill()
		_ = p.Wait()
		tail := logTail(logFile, logStart)
		if strings.Contains(tail, "Address already in use") {
			return nil, fmt.Errorf("%s %s on %s: %w", l.kind, name, addr, errPortInUse)
		}
		return nil, fmt.Errorf("%s %s on %s not ready: %w; %s:\n%s", l.kind, name, addr, err, logFile, tail)
	}
	return p, nil
}

// waitReady polls until the server at addr answers PING and reports p's pid (so a server of
// someone else that already held the port does not count), p exits, or ctx ends.
func waitReady(ctx context.Context, addr string, p *proc.Process) error {
	// Abandon an attempt as soon as the process exits (someone else's listener may accept our
	// connection and never answer).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	var last error
	for {
		if last = pingCheck(ctx, addr, p.Pid()); last == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("redis-server exited: %v", p.Wait())
		default:
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("redis-server exited: %v", p.Wait())
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pingCheck sends PING and INFO server over a raw RESP connection, and checks the answers: +PONG, and
// process_id equal to pid.
func pingCheck(ctx context.Context, addr string, pid int) error {
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	line, err = br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "$") {
		return fmt.Errorf("INFO answered %q", strings.TrimSpace(line))
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 {
		return fmt.Errorf("INFO answered %q", strings.TrimSpace(line))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return err
	}
	want := []byte("\nprocess_id:" + strconv.Itoa(pid) + "\r\n")
	if !bytes.Contains(body, want) {
		return fmt.Errorf("%s is answered by another process than pid %d", addr, pid)
	}
	return nil
}

// logTail returns the last lines of what was written to path from offset on.
func logTail(path string, offset int64) string {
	const max = 4096
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if st.Size()-offset > max {
		offset = st.Size() - max
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, st.Size()-offset))
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return "(log empty)"
	}
	return s
}
