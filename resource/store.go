// Package resource is the protected resource: the storage every critical section reads and
// writes. It is a real Redis whose Lua scripts keep several registers side by side, each with its
// own rule, so one run shows what each rule buys (DESIGN.md, "The protected resource"):
//
//   - unfenced:     no checks; what a lock alone gives you.
//   - fenced-write: a write whose token is lower than the highest token seen is rejected (K5).
//   - fenced-rw:    a read with such a token is rejected too, and a read raises the highest token
//     seen; write-only fencing still loses read-modify-write updates (A(33) reads, B(34) reads,
//     A writes, B writes).
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
)

// Registers lists every register in report order.
var Registers = []string{Unfenced, FencedWrite, FencedRW}

// Fenced reports whether a register needs a fencing token.
func Fenced(register string) bool { return register != Unfenced }

const logKey = "lockcheck:log"

// An access is encoded once, by the script, both as the reply and as the log entry, so the
// client's view and the resource's log cannot disagree.
const scriptPrelude = `
local function value(reg) return tonumber(redis.call('GET', 'lockcheck:reg:' .. reg) or '0') end
local function maxToken(reg) return tonumber(redis.call('GET', 'lockcheck:max:' .. reg) or '-1') end
local client, cs, token = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local regs = {}
local entry = {seq = redis.call('INCR', 'lockcheck:seq'), client = client, cs = cs, token = token, regs = regs}
`

const scriptEpilogue = `
local encoded = cjson.encode(entry)
redis.call('RPUSH', '` + logKey + `', encoded)
return encoded
`

var readScript = redis.NewScript(scriptPrelude + `
entry.op = 'read'
for i = 4, #ARGV do
  local reg = ARGV[i]
  local status = 'ok'
  if reg == 'fenced-rw' then
    if token == nil or token < maxToken(reg) then
      status = 'rejected'
    else
      redis.call('SET', 'lockcheck:max:' .. reg, token)
    end
  end
  regs[reg] = {value = value(reg), status = status}
end` + scriptEpilogue)

var writeScript = redis.NewScript(scriptPrelude + `
entry.op = 'write'
for i = 4, #ARGV, 2 do
  local reg, v = ARGV[i], tonumber(ARGV[i + 1])
  local status = 'ok'
  if reg ~= 'unfenced' then
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

// Read reads the given registers in one atomic step, presenting token (nil: the lock has none).
func (s *Store) Read(ctx context.Context, client string, cs int64, token *int64, registers []string) (map[string]history.Register, error) {
	args := []any{client, cs, tokenArg(token)}
	for _, r := range registers {
		args = append(args, r)
	}
	return s.run(ctx, readScript, args)
}

// Write writes values to registers in one atomic step; each register accepts or rejects on its own.
func (s *Store) Write(ctx context.Context, client string, cs int64, token *int64, values map[string]int64) (map[string]history.Register, error) {
	args := []any{client, cs, tokenArg(token)}
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
// "write"),
// in the order Redis applied the accesses. at stamps them: Redis has no CLOCK_MONOTONIC of ours.
func (s *Store) Log(ctx context.Context, at int64) ([]history.Event, error) {
	lines, err := s.rdb.LRange(ctx, logKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read resource log: %w", err)
	}
	events := make([]history.Event, 0, len(lines))
	for _, line := range lines {
		var e logEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("decode resource log entry %q: %w", line, err)
		}
		events = append(events, history.Event{
			Time: at, Process: history.Resource, Type: history.Note, F: e.Op,
			Target: e.Client, CS: e.CS, Token: e.Token, Registers: e.Regs, Seq: e.Seq,
		})
	}
	return events, nil
}
