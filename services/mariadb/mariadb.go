// Package mariadb is the MariaDB lock service: one mariadbd (Debian's mariadb-server, InnoDB) with
// its data folder in the run folder, for the database lock designs (a row with a UNIQUE key,
// SELECT ... FOR UPDATE, GET_LOCK). The server starts without grant tables (no users, no
// passwords: it is reached only through the run's own links) and creates the lock database at
// every start. Its idle limits come from the scenario's `server:` block, so a scenario can make
// the server end a paused holder's session.
package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lockcheck/lockcheck/internal/yamltime"
	"github.com/lockcheck/lockcheck/locks"
	"github.com/lockcheck/lockcheck/providers"
	"github.com/lockcheck/lockcheck/services"
)

// Kind is the MariaDB lock service: one server, db1.
var Kind = services.OneServer[Settings]{
	Service: locks.MariaDB, Title: "MariaDB", Node: Node, Port: ClientPort, NoClock: services.NoDatabaseClock,
	Params:  map[string]string{locks.ParamDatabase: Database, locks.ParamUser: User},
	Cleanup: cleanup,
	Check: func(set Settings, bad services.Report) {
		services.CheckWhole(bad, "MariaDB", time.Second, "seconds", map[string]yamltime.Duration{"wait_timeout": set.WaitTimeout,
			"idle_transaction_timeout": set.IdleTransactionTimeout, "innodb_lock_wait_timeout": set.InnodbLockWaitTimeout})
	},
	Spec: Spec,
	// Inside a transaction, idle_transaction_timeout when set, else wait_timeout (the server's).
	IdleLimits: func(set Settings) (time.Duration, time.Duration) {
		if set.IdleTransactionTimeout != 0 {
			return set.WaitTimeout.D(), set.IdleTransactionTimeout.D()
		}
		return set.WaitTimeout.D(), set.WaitTimeout.D()
	},
}

func init() { services.Register(Kind) }

// ClientPort is the name of mariadbd's port; ContainerPort its number in a container.
const (
	ClientPort    = "client"
	ContainerPort = 3306
)

// Node is the one server's name.
const Node = "db1"

// Database is the database the lock designs' tables live in; User the user they connect as (any
// name would do: the server runs without grant tables).
const (
	Database = "lockcheck"
	User     = "root"
)

// Settings are the scenario's `server:` block for MariaDB. Each is a server variable of the same
// name, in whole seconds; 0 (unset) keeps the server's default.
type Settings struct {
	// WaitTimeout ends a session idle this long (default 8 hours): its GET_LOCK locks and its open
	// transaction's row locks go with it.
	WaitTimeout yamltime.Duration `yaml:"wait_timeout"`
	// IdleTransactionTimeout ends a session idle this long inside a transaction (default: never).
	IdleTransactionTimeout yamltime.Duration `yaml:"idle_transaction_timeout"`
	// InnodbLockWaitTimeout bounds a wait for a row lock (default 50 s); the wait then fails.
	InnodbLockWaitTimeout yamltime.Duration `yaml:"innodb_lock_wait_timeout"`
}

// args are the settings as mariadbd options.
func (s Settings) args() []string {
	var out []string
	add := func(opt string, d yamltime.Duration) {
		if d != 0 {
			out = append(out, fmt.Sprintf("--%s=%d", opt, int64(d.D()/time.Second)))
		}
	}
	add("wait-timeout", s.WaitTimeout)
	add("interactive-timeout", s.WaitTimeout) // a client that says it is interactive gets the same
	add("idle-transaction-timeout", s.IdleTransactionTimeout)
	add("innodb-lock-wait-timeout", s.InnodbLockWaitTimeout)
	return out
}

// Spec describes one mariadbd with settings set.
func Spec(name string, set Settings) providers.NodeSpec {
	return providers.NodeSpec{
		Name:    name,
		Image:   "mariadb",
		Ports:   []providers.Port{{Name: ClientPort, Number: ContainerPort}},
		LogFile: "mariadb.log",
		Needs:   []providers.Need{{Path: debianBinary, Package: "mariadb-server"}},
		Command: func(pl providers.Placement) ([]string, error) {
			if err := os.MkdirAll(filepath.Join(pl.HostDir, services.DataDir), 0o755); err != nil {
				return nil, err
			}
			// Runs at every start, before the server takes connections.
			initSQL := "CREATE DATABASE IF NOT EXISTS " + Database + ";\n"
			if err := os.WriteFile(filepath.Join(pl.HostDir, "init.sql"), []byte(initSQL), 0o644); err != nil {
				return nil, err
			}
			return append([]string{binary()}, serverArgs(pl, set)...), nil
		},
		Ready: func(ctx context.Context, n providers.Node) error { return Ping(ctx, n.Addr(ClientPort)) },
	}
}

// serverArgs is mariadbd's command line for the node placed at pl.
func serverArgs(pl providers.Placement, set Settings) []string {
	args := []string{
		"--no-defaults", // nothing from /etc/mysql: the machine's own configuration stays out
		// Running as root needs saying so; a server started as another user only warns about it.
		"--user=root",
		"--datadir=" + pl.Dir + "/" + services.DataDir,
		"--port=" + strconv.Itoa(pl.Ports[ClientPort]),
		"--bind-address=" + pl.Host,
		"--socket=mysqld.sock", // relative to the data folder: a run folder's path may be too long for a socket
		"--pid-file=" + pl.Dir + "/mariadbd.pid",
		"--init-file=" + pl.Dir + "/init.sql",
		// No users or passwords: the server is reached only through the run's links. It also
		// spares the 1-2 s mariadb-install-db takes to create the system tables.
		"--skip-grant-tables",
		"--skip-name-resolve",
		"--skip-log-bin",
		"--character-set-server=utf8mb4",
		"--max-connections=200",
		// InnoDB, the source article's engine, small: a data folder of a few MB, not 100.
		"--default-storage-engine=InnoDB",
		"--innodb-buffer-pool-size=16M",
		"--innodb-log-file-size=4M",
		"--innodb-data-file-path=ibdata1:4M:autoextend",
		"--innodb-temp-data-file-path=ibtmp1:1M:autoextend",
		// Files grow 1 MB at a time, not 64: each run folder keeps its data folder, and a few
		// hundred runs of 130 MB each fill a disk.
		"--innodb-autoextend-increment=1",
		// A commit reaches the OS before it is acknowledged, so a killed server keeps it; only a
		// machine crash could lose it, and lockcheck does not simulate one.
		"--innodb-flush-log-at-trx-commit=2",
		"--innodb-buffer-pool-dump-at-shutdown=0",
		"--innodb-buffer-pool-load-at-startup=0",
		"--key-buffer-size=1M",
		"--aria-pagecache-buffer-size=1M",
		"--performance-schema=0",
	}
	return append(args, set.args()...)
}

// debianBinary is where Debian's mariadb-server puts the server.
const debianBinary = "/usr/sbin/mariadbd"

// binary is the server program: on PATH, else Debian's.
func binary() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return debianBinary
}

// DSN is the driver's data source name for the lock database at addr: no retries of its own, a
// connection bounded by timeout; statements are bounded by their contexts.
func DSN(addr string, timeout time.Duration) string {
	c := mysql.NewConfig()
	c.Net, c.Addr, c.User, c.DBName = "tcp", addr, User, Database
	c.Timeout = timeout
	return c.FormatDSN()
}

// cleanup deletes the rows the MariaDB designs keep under key (GET_LOCK's locks end with their
// sessions); a table no run has made yet is fine.
func cleanup(ctx context.Context, addr, key string) error {
	db, err := sql.Open("mysql", DSN(addr, time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, table := range locks.MariaDBLockTables {
		_, err := db.ExecContext(ctx, "DELETE FROM "+table+" WHERE method_name = ?", key)
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == noSuchTable) {
			return fmt.Errorf("mariadb at %s: clean up %s: %w", addr, table, err)
		}
	}
	return nil
}

// noSuchTable is MariaDB's ER_NO_SUCH_TABLE.
const noSuchTable = 1146

// Ping connects to the server at addr and runs a query in the lock database.
func Ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", DSN(addr, time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("mariadb at %s: %w", addr, err)
	}
	return nil
}
