// Package resource is the protected resource: the storage every critical section reads and
// writes. It is a real Redis whose Lua scripts keep several registers side by side, each with its
// own rule, so one run shows what each rule buys:
//
//   - unfenced:     no checks; what a lock alone gives you.
//   - fenced-write: a write whose token is lower than the highest token seen is rejected (K5).
//   - fenced-rw:    a read with such a token is rejected too, and a read raises the highest token
//     seen; write-only fencing still loses read-modify-write updates (A(33) reads, B(34) reads,
//     A writes, B writes).
//   - cas-random:   antirez's alternative to ordered tokens (A4): no order, only the lock's random
//     unique value and a check-and-set on the resource (see the note after Registers).
//
// Each script also appends the access to the resource's own log, in the order Redis applied it.
package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/internal/redisopt"
)

// Register names.
const (
	Unfenced    = "unfenced"
	FencedWrite = "fenced-write"
	FencedRW    = "fenced-rw"
	CASRandom   = "cas-random"
)

// Registers lists every register in report order.
var Registers = []string{Unfenced, FencedWrite, FencedRW, CASRandom}

// Fenced reports whether a register needs a fencing token.
func Fenced(register string) bool { return register == FencedWrite || register == FencedRW }

// NeedsValue reports whether a register needs the lock's random value (cas-random).
func NeedsValue(register string) bool { return register == CASRandom }

// Usable lists the registers an access can touch: fenced registers need a token, cas-random the
// lock's random value.
func (a Access) Usable() []string {
	var out []string
	for _, r := range Registers {
		if (Fenced(r) && a.Token == nil) || (NeedsValue(r) && a.Value == "") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// cas-random is A4 as antirez describes it ("Is Redlock safe?", 2016): a lock whose value is a
// random unique string gives no order, but the resource can still refuse a stale holder by
// check-and-set. When a client starts working on the resource it marks the resource with its
// lock value; it may modify the resource only if the mark is still its own value. So:
//
//   - read: unconditionally set the register's owner to the caller's lock value (the claim), and
//     return the register's value. A read without a value is rejected, as a tokenless read is
//     on the fenced registers.
//   - write: accepted only if the owner is still the caller's value, else "rejected".
//
// The read does not refuse anyone (nothing is ordered, so there is no "stale" value to refuse):
// the last reader wins, and any earlier reader's write is refused. That makes every accepted
// read-modify-write atomic on this register, but it does not keep a stale holder out: a holder
// whose lease ended, resuming before its read, claims the resource and writes, while the
// legitimate holder's write is then refused. Both are recorded as they happen. A value unique per
// client (Redisson's owner id) serves as well as one per acquisition: a client never has two
// critical sections at once. The owner mark lives in lockcheck:owner:cas-random.

const logKey = "lockcheck:log"

// An access is encoded once, by the script, both as the reply and as the log entry, so the
// client's view and the resource's log cannot disagree.
const scriptPrelude = `
local function value(reg) return tonumber(redis.call('GET', 'lockcheck:reg:' .. reg) or '0') end
local function maxToken(reg) return tonumber(redis.call('GET', 'lockcheck:max:' .. reg) or '-1') end
local client, cs, token = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local lockValue = ARGV[4]
if lockValue == '' then lockValue = nil end
local regs = {}
local entry = {seq = redis.call('INCR', 'lockcheck:seq'), client = client, cs = cs, token = token, value = lockValue, regs = regs}
local firstReg = 5
`

const scriptEpilogue = `
local encoded = cjson.encode(entry)
redis.call('RPUSH', '` + logKey + `', encoded)
return encoded
`

var readScript = redis.NewScript(scriptPrelude + `
entry.op = 'read'
for i = firstReg, #ARGV do
  local reg = ARGV[i]
  local status = 'ok'
  if reg == 'fenced-rw' then
    if token == nil or token < maxToken(reg) then
      status = 'rejected'
    else
      redis.call('SET', 'lockcheck:max:' .. reg, token)
    end
  elseif reg == 'cas-random' then
    if lockValue == nil then
      status = 'rejected'
    else
      redis.call('SET', 'lockcheck:owner:' .. reg, lockValue)
    end
  end
  regs[reg] = {value = value(reg), status = status}
end` + scriptEpilogue)

var writeScript = redis.NewScript(scriptPrelude + `
entry.op = 'write'
for i = firstReg, #ARGV, 2 do
  local reg, v = ARGV[i], tonumber(ARGV[i + 1])
  local status = 'ok'
  if reg == 'cas-random' then
    if lockValue == nil or redis.call('GET', 'lockcheck:owner:' .. reg) ~= lockValue then
      status = 'rejected'
    end
  elseif reg ~= 'unfenced' then
    if token == nil or token < maxToken(reg) then
      status = 'rejected'
    else
      redis.call('SET', 'lockcheck:max:' .. reg, token)
    end
  end
  if status == 'ok' then redis.call('SET', 'lockcheck:reg:' .. reg, v) end
  regs[reg] = {value = v, status = status}
end` + scriptEpilogue)

// Store is one client's connection to the resource.
type Store struct {
	rdb *redis.Client
}

// Dial connects to the resource at addr, with the same deliberate settings as lock clients (no
// retries: a retried write could apply twice; see internal/redisopt). Bound each call with ctx.
func Dial(addr string, dialTimeout time.Duration) *Store {
	return &Store{rdb: redis.NewClient(redisopt.Options(addr, dialTimeout))}
}

// Close closes the connection.
func (s *Store) Close() error { return s.rdb.Close() }

// Prepare loads the access scripts into the resource's script cache before any client runs.
// A client calls a script by its hash first (EVALSHA) and sends the whole script only when Redis
// does not know it: a first write held back in the network until after its client gave up
// would otherwise land as an unknown hash and be refused, where the same write a moment later,
// once another client had sent the script, would apply. Whether a late write lands must not
// hang on who wrote first.
func (s *Store) Prepare(ctx context.Context) error {
	for _, script := range []*redis.Script{readScript, writeScript} {
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load the resource's scripts: %w", err)
		}
	}
	return nil
}

type logEntry struct {
	Seq    int64                       `json:"seq"`
	Op     string                      `json:"op"`
	Client string                      `json:"client"`
	CS     int64                       `json:"cs"`
	Token  *int64                      `json:"token"`
	Regs   map[string]history.Register `json:"regs"`
}

func tokenArg(token *int64) string {
	if token == nil {
		return "none" // tonumber("none") is nil in Lua: fenced registers reject
	}
	return strconv.FormatInt(*token, 10)
}

// Access is who accesses the resource and what its lock gave it to present.
type Access struct {
	Client string
	CS     int64  // critical section number
	Token  *int64 // fencing token; nil when the lock has none (fenced registers reject)
	Value  string // the lock's random value; "" when it has none (cas-random rejects)
}

func (a Access) args() []any { return []any{a.Client, a.CS, tokenArg(a.Token), a.Value} }

// Read reads the given registers in one atomic step.
func (s *Store) Read(ctx context.Context, a Access, registers []string) (map[string]history.Register, error) {
	args := a.args()
	for _, r := range registers {
		args = append(args, r)
	}
	return s.run(ctx, readScript, args)
}

// Write writes values to registers in one atomic step; each register accepts or rejects on its own.
func (s *Store) Write(ctx context.Context, a Access, values map[string]int64) (map[string]history.Register, error) {
	args := a.args()
	for _, r := range Registers { // fixed order keeps the log readable
		if v, ok := values[r]; ok {
			args = append(args, r, v)
		}
	}
	return s.run(ctx, writeScript, args)
}

func (s *Store) run(ctx context.Context, script *redis.Script, args []any) (map[string]history.Register, error) {
	reply, err := script.Run(ctx, s.rdb, nil, args...).Text()
	if err != nil {
		return nil, err
	}
	var e logEntry
	if err := json.Unmarshal([]byte(reply), &e); err != nil {
		return nil, fmt.Errorf("decode resource reply %q: %w", reply, err)
	}
	return e.Regs, nil
}

// Final reads every register's current value, for the end-of-run lost-update count.
func (s *Store) Final(ctx context.Context) (map[string]history.Register, error) {
	out := map[string]history.Register{}
	for _, r := range Registers {
		v, err := s.rdb.Get(ctx, "lockcheck:reg:"+r).Int64()
		if err == redis.Nil {
			v, err = 0, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read final value of %s: %w", r, err)
		}
		out[r] = history.Register{Value: v}
	}
	return out, nil
}

// Log returns the resource's own access log as history events (process "resource", f "read" or
// "write"), in the order Redis applied the accesses. at stamps them: Redis has no CLOCK_MONOTONIC
// of ours.
func (s *Store) Log(ctx context.Context, at int64) ([]history.Event, error) {
	var events []history.Event
	err := s.EachLogEntry(ctx, at, func(e history.Event) { events = append(events, e) })
	return events, err
}

// logPage is how many log entries EachLogEntry reads at once.
const logPage = 5000

// EachLogEntry hands the resource's access log to fn one entry at a time, as Log returns it, read
// a page at a time: a soak's log has hundreds of thousands of entries, which read at once would
// take the controller hundreds of megabytes at the very end of the run. The clients have stopped
// when it is read, so the log no longer grows.
func (s *Store) EachLogEntry(ctx context.Context, at int64, fn func(history.Event)) error {
	for start := int64(0); ; start += logPage {
		lines, err := s.rdb.LRange(ctx, logKey, start, start+logPage-1).Result()
		if err != nil {
			return fmt.Errorf("read resource log: %w", err)
		}
		for _, line := range lines {
			var e logEntry
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				return fmt.Errorf("decode resource log entry %q: %w", line, err)
			}
			fn(history.Event{Time: at, Process: history.Resource, Type: history.Note, F: e.Op,
				Target: e.Client, CS: e.CS, Token: e.Token, Registers: e.Regs, Seq: e.Seq})
		}
		if len(lines) < logPage {
			return nil
		}
	}
}
