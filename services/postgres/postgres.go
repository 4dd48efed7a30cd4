// Package postgres is the PostgreSQL lock service: one server (Debian's postgresql) with its data
// folder in the run folder, made by initdb at the first start, for the advisory-lock designs. The
// server runs as the user postgres (it refuses root), trusts every connection (it is reached
// only through the run's own links) and takes its idle limits from the scenario's `server:`
// block, so a scenario can make it end a paused holder's session.
package postgres

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// Kind is the PostgreSQL lock service: one server, db1.
var Kind = services.OneServer[Settings]{
	Service: locks.PostgreSQL, Title: "PostgreSQL", Node: Node, Port: ClientPort, NoClock: services.NoDatabaseClock,
	Params: map[string]string{locks.ParamDatabase: Database, locks.ParamUser: User},
	// The PostgreSQL designs' advisory locks end with their sessions, and their token sequence is
	// shared by every run (a token is compared only with tokens of the same run): nothing to remove.
	Cleanup: func(context.Context, string, string) error { return nil },
	Check: func(set Settings, bad services.Report) {
		services.CheckWhole(bad, "PostgreSQL", time.Millisecond, "milliseconds", map[string]yamltime.Duration{
			"idle_in_transaction_session_timeout": set.IdleInTransactionSessionTimeout, "idle_session_timeout": set.IdleSessionTimeout})
	},
	Spec: Spec,
	IdleLimits: func(set Settings) (time.Duration, time.Duration) {
		return set.IdleSessionTimeout.D(), set.IdleInTransactionSessionTimeout.D()
	},
}

func init() { services.Register(Kind) }

// ClientPort is the name of the server's port; ContainerPort its number in a container.
const (
	ClientPort    = "client"
	ContainerPort = 5432
)

// Node is the one server's name.
const Node = "db1"

// User is the operating-system user the server runs as, and the database user clients connect
// as; Database the database they use.
const (
	User     = "postgres"
	Database = "postgres"
)

// Settings are the scenario's `server:` block for PostgreSQL: server parameters of the same name,
// in whole milliseconds; 0 (unset) keeps the server's default (off).
type Settings struct {
	// IdleInTransactionSessionTimeout ends a session idle this long inside a transaction: its
	// transaction-level advisory locks go with it.
	IdleInTransactionSessionTimeout yamltime.Duration `yaml:"idle_in_transaction_session_timeout"`
	// IdleSessionTimeout ends a session idle this long outside a transaction: its session-level
	// advisory locks go with it.
	IdleSessionTimeout yamltime.Duration `yaml:"idle_session_timeout"`
}

func (s Settings) args() []string {
	var out []string
	add := func(param string, d yamltime.Duration) {
		if d != 0 {
			out = append(out, "-c", fmt.Sprintf("%s=%d", param, d.D().Milliseconds()))
		}
	}
	add("idle_in_transaction_session_timeout", s.IdleInTransactionSessionTimeout)
	add("idle_session_timeout", s.IdleSessionTimeout)
	return out
}

// Spec describes one PostgreSQL server with settings set.
func Spec(name string, set Settings) providers.NodeSpec {
	return providers.NodeSpec{
		Name:    name,
		Image:   "postgres",
		Ports:   []providers.Port{{Name: ClientPort, Number: ContainerPort}},
		LogFile: "postgres.log",
		User:    User,
		Needs:   needs(),
		Command: func(pl providers.Placement) ([]string, error) {
			if err := reachable(pl.HostDir); err != nil {
				return nil, err
			}
			return []string{"/bin/sh", "-c", script(pl, set)}, nil
		},
		Ready: func(ctx context.Context, n providers.Node) error { return Ping(ctx, n.Addr(ClientPort)) },
	}
}

// script makes the data folder on the first start (initdb) and then runs the server in the
// shell's place, so the process the provider pauses and kills is the server itself. It finds
// the programs on PATH or in Debian's versioned folder, so it runs the same on the machine and
// in a container.
func script(pl providers.Placement, set Settings) string {
	data := pl.Dir + "/" + services.DataDir
	server := []string{"postgres", "-D", quote(data),
		"-p", strconv.Itoa(pl.Ports[ClientPort]),
		"-c", "listen_addresses=" + quote(pl.Host),
		"-c", "unix_socket_directories=''", // TCP only: a run folder's path may be too long for a socket
		// A killed server loses nothing the OS already has: no fsync (lockcheck simulates no
		// machine crash), and a small server.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=100",
		"-c", "logging_collector=off",
	}
	server = append(server, set.args()...)
	return strings.Join([]string{
		"set -e",
		`PATH="$PATH:$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"`,
		// initdb into $1, trusting every connection.
		"initdb_at() {",
		"  initdb -D \"$1\" -U " + User + " --auth=trust --no-sync -E UTF8 --locale=C --wal-segsize=1 >/dev/null &&",
		`  echo "host all all all trust" >> "$1/pg_hba.conf"`,
		"}",
		"if [ ! -s " + quote(data+"/PG_VERSION") + " ]; then",
		"  rm -rf " + quote(data) + " # left half made by a start that was killed",
		templated(pl, data),
		"fi",
		// After a SIGKILL of the server's process group, backends may still be exiting: a new
		// server would find the old shared memory still attached and refuse to start. Wait
		// (up to 5 s) until no process works in the data folder. Only after a server ran there
		// (it leaves postmaster.pid). test -ef compares the folders without a fork: a readlink
		// for each of the hundreds of processes of a matrix running ten cells at once took 2 s
		// a look on a loaded machine, and a crash meant "restarted at once" lasted as long.
		"i=0",
		"[ -e " + quote(data+"/postmaster.pid") + " ] || i=100",
		"while [ $i -lt 100 ]; do",
		"  busy=",
		"  for p in /proc/[0-9]*; do",
		"    if [ \"$p/cwd\" -ef " + quote(data) + " ]; then busy=1; break; fi",
		"  done",
		"  [ -z \"$busy\" ] && break",
		"  sleep 0.05; i=$((i+1))",
		"done",
		"exec " + strings.Join(server, " "),
	}, "\n")
}

// templateLayout names what initdb_at makes; change it when its options change, so that no
// template made by the old ones is copied.
const templateLayout = "1"

// templated is the script's lines that make the data folder: a copy of a data folder initdb made
// once per machine and PostgreSQL release, when the server runs on this machine (initdb costs
// about 2 CPU-seconds, most of a short run's server CPU; a copy, a few hundredths), else initdb.
// The template is made by a server's own start, as the server's user, into a folder of its own
// renamed into place, so starts side by side never see half of one; a start that cannot make or
// copy one runs initdb as before.
func templated(pl providers.Placement, data string) string {
	cache := templateCache
	if cache == "" {
		cache = defaultTemplateCache()
	}
	if pl.Dir != pl.HostDir || cache == "" {
		return "  initdb_at " + quote(data)
	}
	return strings.Join([]string{
		"  t=" + quote(cache) + `/"$(initdb -V | tr -c 'A-Za-z0-9.\n' _)-` + templateLayout + `"`,
		`  if [ ! -s "$t/PG_VERSION" ] && mkdir -p "$(dirname "$t")" 2>/dev/null; then`,
		`    (initdb_at "$t.$$" && mv -T "$t.$$" "$t") 2>/dev/null || rm -rf "$t.$$"`,
		"  fi",
		`  cp -a "$t" ` + quote(data) + " 2>/dev/null || { rm -rf " + quote(data) + "; initdb_at " + quote(data) + "; }",
	}, "\n")
}

// templateCache, when set, is where templates go instead (a test's empty folder).
var templateCache string

// defaultTemplateCache is where the server's user keeps initdb templates: its own cache folder
// (the user postgres's home when the harness is root and so runs the server as postgres); ""
// when there is none.
func defaultTemplateCache() string {
	home, err := os.UserHomeDir()
	if os.Geteuid() == 0 {
		u, uerr := user.Lookup(User)
		if uerr != nil {
			return ""
		}
		home, err = u.HomeDir, nil
	}
	if err != nil || home == "" || home == "/" {
		return ""
	}
	return filepath.Join(home, ".cache", "lockcheck", "initdb")
}

// quote makes s one word for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// needs: Debian keeps the programs in a versioned folder, off PATH.
func needs() []providers.Need {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) > 0 {
		return []providers.Need{{Path: bins[len(bins)-1], Package: "postgresql"}}
	}
	return []providers.Need{{Path: "/usr/lib/postgresql/15/bin/postgres", Package: "postgresql"}}
}

// reachable checks, when the harness is root (and so the server runs as User), that User can pass
// through every folder above dir: else the server cannot reach its own data folder and fails with
// a bare "permission denied".
func reachable(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return fmt.Errorf("PostgreSQL runs as user %s: %w", User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		owner := -1
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			owner = int(sys.Uid)
		}
		if owner != uid && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("PostgreSQL runs as user %s, which cannot enter %s (mode %#o): put the results folder "+
				"where others may pass, or chmod o+x %s", User, d, st.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// ConnString is what a client dials: the server at addr as user on database, with a bounded
// connect.
func ConnString(addr, user, database string, timeout time.Duration) string {
	host, port, _ := strings.Cut(addr, ":")
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable connect_timeout=%d",
		host, port, user, database, max(1, int(timeout/time.Second)))
}

// Ping connects to the server at addr and runs a query.
func Ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ConnString(addr, User, Database, time.Second))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("postgres at %s: %w", addr, err)
	}
	return nil
}
