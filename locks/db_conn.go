//go:build !quickstart

package locks

// Database sessions for the database lock designs (db-unique-row, db-for-update, mysql-get-lock on
// MariaDB; pg-advisory, pg-advisory-xact on PostgreSQL). Every design holds one session per
// client, because what these locks hold belongs to a session: a GET_LOCK lock, a transaction's
// row lock, an advisory lock.
//
// The driver settings are deliberate, as internal/redisopt's are for go-redis:
//
//   - every statement is bounded by its context, never by socket timeouts; the connect by
//     Env.Timeout. Both drivers close the connection when a context ends mid-statement.
//   - no hidden retries: a session is one pinned connection (database/sql's Conn, pgx's Conn), and
//     database/sql retries a failed statement on a new connection only at the pool level, which
//     these designs never use. A retried acquire could report "busy" for a lock this client just
//     took, or, on the same session, take a re-entrant lock twice (GET_LOCK and advisory locks
//     count), so that one release leaves it held.
//   - an error whose outcome is unknown (a timeout, a broken connection) drops the session: its
//     connection is closed, so the server ends it and frees whatever it may hold once it notices,
//     and the next statement dials afresh. The attempt is reported as unknown, never as "busy".
//   - MySQL statements are sent with their arguments inlined (interpolateParams): one round trip,
//     no server-side prepared statements. PostgreSQL statements use the simple protocol: one
//     round trip, no statement cache that a new session would not have.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"hash/fnv"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Services of the database designs (names of package services' kinds).
const (
	MariaDB    = "mariadb"
	PostgreSQL = "postgres"
)

// idleLimit is a session lock's promise: the server's idle limit named by param, from each
// statement, or Forever without one.
func idleLimit(param string) func(Env) time.Duration {
	return func(env Env) time.Duration {
		if d, err := time.ParseDuration(env.Params[param]); err == nil && d > 0 {
			return d
		}
		return Forever
	}
}

// Endpoint parameters a database service gives its clients (Env.Params).
const (
	ParamDatabase = "database"
	ParamUser     = "user"
)

// BeforeLockStatement is the database designs' program point: the client holds an open session
// and is about to send the statement that takes the lock (INSERT, SELECT ... FOR UPDATE,
// GET_LOCK, pg_try_advisory_lock). A delay of the client's link planned here holds that
// statement back past the client's timeout: the server may run it after the client gave up,
// the case of an acquire whose reply never came back.
const BeforeLockStatement = "before-lock-statement"

// mysqlSession is one MariaDB session, dialed on first use and again after it was dropped.
type mysqlSession struct {
	db    *sql.DB
	conn  *sql.Conn
	setup []string // statements run on every new session (SET autocommit=0, ...)
}

func newMySQLSession(env Env, setup ...string) (*mysqlSession, error) {
	if len(env.Nodes) == 0 {
		return nil, errors.New("no MariaDB address")
	}
	c := mysql.NewConfig()
	c.Net, c.Addr = "tcp", env.Nodes[0]
	c.User, c.DBName = env.Params[ParamUser], env.Params[ParamDatabase]
	c.Timeout = env.Timeout    // connect
	c.InterpolateParams = true // one round trip per statement, no prepared statements
	c.Params = map[string]string{}
	connector, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(2) // the session, and one being dialed while a dropped one closes
	db.SetMaxIdleConns(0) // a connection given back is closed, never handed out again
	return &mysqlSession{db: db, setup: setup}, nil
}

// session returns the open session, dialing one if there is none.
func (s *mysqlSession) session(ctx context.Context) (*sql.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, stmt := range s.setup {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			discard(conn)
			return nil, err
		}
	}
	s.conn = conn
	return conn, nil
}

// drop closes the session's connection: the server ends the session (and frees what it holds)
// when it notices.
func (s *mysqlSession) drop() {
	if s.conn != nil {
		discard(s.conn)
		s.conn = nil
	}
}

// discard closes conn for good rather than giving it back to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

func (s *mysqlSession) close() error {
	s.drop()
	return s.db.Close()
}

// MariaDB error numbers the designs tell apart.
const (
	erDupEntry             = 1062 // a duplicate key: the lock row exists
	erLockWaitTimeout      = 1205 // innodb_lock_wait_timeout ran out
	erDeadlock             = 1213 // chosen as a deadlock's victim: the transaction was rolled back
	erStatementTimeExpired = 1969 // max_statement_time ran out
)

// mysqlErrorIs reports whether err is a server error with one of the numbers: a statement the
// server refused, certainly without effect.
func mysqlErrorIs(err error, numbers ...uint16) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	for _, n := range numbers {
		if me.Number == n {
			return true
		}
	}
	return false
}

// pgSession is one PostgreSQL session, dialed on first use and again after it was dropped.
type pgSession struct {
	cfg  *pgx.ConnConfig
	conn *pgx.Conn
}

func newPGSession(env Env) (*pgSession, error) {
	if len(env.Nodes) == 0 {
		return nil, errors.New("no PostgreSQL address")
	}
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, err
	}
	host, port, err := splitHostPort(env.Nodes[0])
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port = host, port
	cfg.User, cfg.Database = env.Params[ParamUser], env.Params[ParamDatabase]
	cfg.ConnectTimeout = env.Timeout
	cfg.Fallbacks = nil                                        // one address, one attempt
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // one round trip, nothing cached per session
	cfg.RuntimeParams["application_name"] = env.Client         // who holds what, in pg_stat_activity
	return &pgSession{cfg: cfg}, nil
}

func (s *pgSession) session(ctx context.Context) (*pgx.Conn, error) {
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return conn, nil
}

// drop closes the session's connection: the server ends the session (and frees what it holds)
// when it notices.
func (s *pgSession) drop() {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = s.conn.Close(ctx)
		cancel()
		s.conn = nil
	}
}

func (s *pgSession) close() error {
	s.drop()
	return nil
}

// PostgreSQL error codes (SQLSTATE) that say the server ended the session itself: whatever it
// held is gone.
const (
	pgIdleInTransactionTimeout = "25P03"
	pgIdleSessionTimeout       = "57P05"
	pgAdminShutdown            = "57P01"
	pgDuplicateTable           = "42P07"
	pgUniqueViolation          = "23505"
)

// pgCode is err's SQLSTATE, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// sessionEnded reports whether err says the server ended the session (an idle limit, a
// shutdown): its locks were freed, certainly.
func sessionEnded(err error) bool {
	switch pgCode(err) {
	case pgIdleInTransactionTimeout, pgIdleSessionTimeout, pgAdminShutdown:
		return true
	}
	return false
}

// advisoryKey maps a lock key to the 64-bit number advisory locks are named by.
func advisoryKey(key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

// waitWithin is how long a blocking lock statement may wait server-side: half the time ctx has
// left, so the answer (granted, or timed out: busy) comes back before the client gives up.
func waitWithin(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Second
	}
	return max(time.Until(d)/2, time.Millisecond)
}

func splitHostPort(addr string) (string, uint16, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	return host, uint16(port), err
}

// MariaDBLockTables are the tables the MariaDB designs keep a row per lock in, by method_name
// (the lock's key): what a run removes from a server it did not start.
var MariaDBLockTables = []string{"method_lock", "method_lock_row"}
