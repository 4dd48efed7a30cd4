package history

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The decoder below reads one line of a history into an Event without reflection: a soak run's
// history has a million lines, and encoding/json spent most of `lockcheck check`'s time on them.
// It accepts what encoding/json would accept for an Event (and TestDecoderAgreesWithEncodingJSON
// holds the two together), except that keys must be spelt exactly, every key of Event must be
// present where it is required (see checkEvent), params must be an object, and the fault
// parameters older histories kept as keys of the event are gathered into Params (legacyParams).
// Its errors name the field.

// fieldError is a problem with one field of a line.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return fmt.Sprintf("field %q: %s", e.field, e.msg)
}

// parser holds one line and a position in it. Strings it returns are interned: a history names
// the same few processes, types and registers a million times.
type parser struct {
	b []byte
	i int
	// The field being read, for errors: a key of the event and, inside registers, a register's
	// name and its own key. Kept as they are and joined only for an error.
	curKey      []byte
	reg, regSub string
	intern      map[string]string
	// legacy holds, for the line being read, the value of each key of legacyParams (nil: absent);
	// anyLegacy says whether one was set (most lines have none: nothing to clear or gather).
	legacy    [len(legacyParams)][]byte
	anyLegacy bool
}

// legacyParams are the keys in which histories written before faults kept their parameters in
// Params held them, as part of the event: a partition's or delay's nodes, a clock's offset and
// rate, a delay's latency. Their names and values are those the kinds' parameters have in Params,
// so the decoder moves them there as they are; nothing else reads them. This list never grows.
var legacyParams = [...]string{"nodes", "offset", "rate", "latency"}

func (p *parser) fail(format string, args ...any) error {
	field := string(p.curKey)
	if p.reg != "" {
		field += "." + p.reg
		if p.regSub != "" {
			field += "." + p.regSub
		}
	}
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// describe names what is at the current position, for "want X, got Y" errors.
func (p *parser) describe() string {
	if p.i >= len(p.b) {
		return "the end of the line"
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case p.literal("true") || p.literal("false"):
		return "a boolean"
	case p.literal("null"):
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	default:
		return strconv.QuoteRune(rune(c))
	}
}

func (p *parser) expect(c byte) error {
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != c {
		return p.fail("want %q, got %s", c, p.describe())
	}
	p.i++
	return nil
}

// literal tells whether lit is next.
func (p *parser) literal(lit string) bool {
	return len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit
}

// null consumes a JSON null if one is next.
func (p *parser) null() bool {
	p.skipSpace()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// str reads a JSON string, interned when it has no escapes (the common case).
func (p *parser) str() (string, error) {
	p.skipSpace()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", p.fail("want a string, got %s", p.describe())
	}
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			raw := p.b[start+1 : p.i]
			p.i++
			if escaped {
				var s string
				if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
					return "", p.fail("bad string: %v", err)
				}
				return s, nil
			}
			if !utf8.Valid(raw) {
				return string(validUTF8(raw)), nil
			}
			if s, ok := p.intern[string(raw)]; ok {
				return s, nil
			}
			s := string(raw)
			if len(p.intern) < 4096 { // names repeat; free text (errors) need not stay
				p.intern[s] = s
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.fail("control character %q in a string", c)
		default:
			p.i++
		}
	}
	return "", p.fail("unterminated string")
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// number returns the bytes of a JSON number, checked against JSON's grammar.
func (p *parser) number() ([]byte, bool, error) {
	p.skipSpace()
	start := p.i
	isInt := true
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	first := p.i
	if n := digits(); n == 0 {
		p.i = start
		return nil, false, p.fail("want a number, got %s", p.describe())
	} else if n > 1 && p.b[first] == '0' {
		return nil, false, p.fail("bad number %q", p.b[start:p.i])
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		isInt = false
		p.i++
		if digits() == 0 {
			return nil, false, p.fail("bad number %q", p.b[start:p.i])
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		isInt = false
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false, p.fail("bad number %q", p.b[start:p.i])
		}
	}
	return p.b[start:p.i], isInt, nil
}

// int64 reads an integer; a fraction or exponent is an error, as in encoding/json.
func (p *parser) int64() (int64, error) {
	p.skipSpace()
	if p.i >= len(p.b) || (p.b[p.i] != '-' && (p.b[p.i] < '0' || p.b[p.i] > '9')) {
		return 0, p.fail("want an integer, got %s", p.describe())
	}
	raw, isInt, err := p.number()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, p.fail("want an integer, got %s", raw)
	}
	// Fast path: up to 18 digits cannot overflow.
	neg, d := false, raw
	if d[0] == '-' {
		neg, d = true, d[1:]
	}
	if len(d) <= 18 {
		var v int64
		for _, c := range d {
			v = v*10 + int64(c-'0')
		}
		if neg {
			v = -v
		}
		return v, nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, p.fail("integer %s out of range", raw)
	}
	return v, nil
}

func (p *parser) float64() (float64, error) {
	raw, _, err := p.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, p.fail("number %s out of range", raw)
	}
	return v, nil
}

// object calls fn for each key of an object; fn must consume the key's value.
func (p *parser) object(fn func(key []byte) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return p.fail("want a key, got %s", p.describe())
		}
		key, err := p.key()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.b) {
			return p.fail("want ',' or '}', got the end of the line")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.fail("want ',' or '}', got %s", p.describe())
		}
	}
}

// key reads an object key as raw bytes (escapes resolved only when present).
func (p *parser) key() ([]byte, error) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], nil
		case c == '\\':
			p.i = start - 1
			s, err := p.str()
			return []byte(s), err
		case c < 0x20:
			return nil, p.fail("control character %q in a key", c)
		}
	}
	return nil, p.fail("unterminated key")
}

// skipValue consumes any JSON value (a key this decoder does not know).
func (p *parser) skipValue(depth int) error {
	if depth > 64 {
		return p.fail("nested too deeply")
	}
	p.skipSpace()
	if p.i >= len(p.b) {
		return p.fail("want a value, got the end of the line")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{':
		return p.object(func([]byte) error { return p.skipValue(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skipValue(depth + 1) })
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.number()
		return err
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			return nil
		}
	}
	return p.fail("want a value, got %s", p.describe())
}

func (p *parser) array(fn func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.b) {
			return p.fail("want ',' or ']', got the end of the line")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.fail("want ',' or ']', got %s", p.describe())
		}
	}
}

// seen records which of the fields an event must have were present.
type seen struct{ t, process, typ, f bool }

// parseEvent reads one line into e (reset first). regs, if not nil, is an empty map to reuse for
// e.Registers.
func (p *parser) parseEvent(line []byte, e *Event, regs map[string]Register) (seen, error) {
	*e = Event{}
	p.b, p.i, p.curKey, p.reg, p.regSub = line, 0, nil, "", ""
	if p.anyLegacy {
		p.legacy, p.anyLegacy = [len(legacyParams)][]byte{}, false
	}
	var s seen
	err := p.object(func(key []byte) error {
		p.curKey = key
		var err error
		switch string(key) {
		case "t":
			s.t = true
			e.Time, err = p.nullableInt(e.Time)
		case "process":
			s.process = true
			e.Process, err = p.nullableStr(e.Process)
		case "type":
			s.typ = true
			var t string
			t, err = p.nullableStr(string(e.Type))
			e.Type = Type(t)
		case "f":
			s.f = true
			e.F, err = p.nullableStr(e.F)
		case "op":
			e.Op, err = p.nullableInt(e.Op)
		case "cs":
			e.CS, err = p.nullableInt(e.CS)
		case "token":
			if p.null() {
				e.Token = nil
				return nil
			}
			var v int64
			if v, err = p.int64(); err == nil {
				e.Token = &v
			}
		case "registers":
			if p.null() {
				e.Registers = nil
				return nil
			}
			if e.Registers == nil {
				if regs != nil {
					e.Registers, regs = regs, nil
				} else {
					e.Registers = map[string]Register{}
				}
			}
			err = p.registers(e.Registers)
		case "role":
			e.Role, err = p.nullableStr(e.Role)
		case "params":
			p.skipSpace()
			start := p.i
			if !p.null() {
				if p.i >= len(p.b) || p.b[p.i] != '{' {
					return p.fail("want an object, got %s", p.describe())
				}
				err = p.skipValue(0)
			}
			e.Params = append(json.RawMessage{}, p.b[start:p.i]...)
		case "nodes":
			err = p.legacyParam(0, func() error {
				return p.array(func() error { _, err := p.str(); return err })
			})
		case "target":
			e.Target, err = p.nullableStr(e.Target)
		case "as":
			e.As, err = p.nullableStr(e.As)
		case "point":
			e.Point, err = p.nullableStr(e.Point)
		case "pass":
			var v int64
			v, err = p.nullableInt(int64(e.Pass))
			if err == nil && (v > int64(maxInt) || v < int64(minInt)) {
				err = p.fail("integer %d out of range", v)
			}
			e.Pass = int(v)
		case "duration":
			e.Duration, err = p.nullableInt(e.Duration)
		case "offset":
			err = p.legacyParam(1, func() error { _, err := p.int64(); return err })
		case "rate":
			err = p.legacyParam(2, func() error { _, err := p.float64(); return err })
		case "latency":
			err = p.legacyParam(3, func() error { _, err := p.int64(); return err })
		case "error":
			e.Error, err = p.nullableStr(e.Error)
		case "design":
			e.Design, err = p.nullableStr(e.Design)
		case "seq":
			e.Seq, err = p.nullableInt(e.Seq)
		case "server":
			e.Server, err = p.nullableStr(e.Server)
		case "promise_ns":
			e.Promise, err = p.nullableInt(e.Promise)
		case "since_ns":
			e.Since, err = p.nullableInt(e.Since)
		case "session":
			e.Session, err = p.nullableStr(e.Session)
		case "weakness":
			e.Weakness, err = p.nullableStr(e.Weakness)
		case "rule":
			if p.null() {
				e.Rule = nil
				return nil
			}
			if e.Rule == nil { // a repeated key fills the same rule, as in encoding/json
				e.Rule = &PromiseRule{}
			}
			err = p.rule(e.Rule)
		default:
			// A key this decoder does not know is skipped, as encoding/json would; but one that
			// differs from a field only in case is a misspelling, which encoding/json would
			// take for the field: refuse it rather than read something else.
			for _, f := range eventFields {
				if strings.EqualFold(string(key), f) {
					return p.fail("not a field of an event; did you mean %q?", f)
				}
			}
			err = p.skipValue(0)
		}
		return err
	})
	if err != nil {
		return s, err
	}
	p.curKey = nil
	p.skipSpace()
	if p.i < len(p.b) {
		return s, p.fail("unexpected %s after the event's closing brace", p.describe())
	}
	if p.anyLegacy && e.Params == nil {
		e.Params = p.legacyObject()
	}
	return s, nil
}

// legacyParam reads the value of legacyParams[i] with read, which checks its type as the field
// it was once had it checked, and keeps the value's text; a null leaves the key out.
func (p *parser) legacyParam(i int, read func() error) error {
	if p.null() {
		p.legacy[i] = nil
		return nil
	}
	p.skipSpace()
	start := p.i
	if err := read(); err != nil {
		return err
	}
	p.legacy[i], p.anyLegacy = p.b[start:p.i], true
	return nil
}

// legacyObject is the object of the legacyParams keys the line had, in their order; nil when it
// had none.
func (p *parser) legacyObject() json.RawMessage {
	var out json.RawMessage
	for i, v := range p.legacy {
		if v == nil {
			continue
		}
		if out == nil {
			out = append(out, '{')
		} else {
			out = append(out, ',')
		}
		out = append(append(append(out, '"'), legacyParams[i]...), '"', ':')
		out = append(out, v...)
	}
	if out != nil {
		out = append(out, '}')
	}
	return out
}

// eventFields are Event's JSON keys, and the legacyParams.
var eventFields = []string{"t", "process", "type", "f", "op", "cs", "token", "registers", "role",
	"target", "as", "point", "pass", "duration", "params", "error", "design", "seq", "server", "promise_ns", "since_ns",
	"session", "rule", "weakness", "nodes", "offset", "rate", "latency"}

// ruleFields are PromiseRule's JSON keys.
var ruleFields = []string{"words", "slack_ns", "client_clocks", "connection"}

// rule reads a design note's promise rule into r.
func (p *parser) rule(r *PromiseRule) error {
	return p.object(func(k []byte) error {
		var err error
		p.reg = string(k)
		switch string(k) {
		case "words":
			r.Words, err = p.nullableStr(r.Words)
		case "slack_ns":
			r.Slack, err = p.nullableInt(r.Slack)
		case "client_clocks":
			r.ClientClocks, err = p.nullableBool(r.ClientClocks)
		case "connection":
			r.Connection, err = p.nullableBool(r.Connection)
		default:
			for _, f := range ruleFields {
				if strings.EqualFold(string(k), f) {
					return p.fail("not a field of a promise rule (%s)", strings.Join(ruleFields, ", "))
				}
			}
			err = p.skipValue(1)
		}
		p.reg = ""
		return err
	})
}

const (
	maxInt = int(^uint(0) >> 1)
	minInt = -maxInt - 1
)

// nullableInt reads an integer; null keeps the old value, as encoding/json does.
func (p *parser) nullableInt(old int64) (int64, error) {
	if p.null() {
		return old, nil
	}
	return p.int64()
}

// nullableBool reads true or false; null keeps the old value.
func (p *parser) nullableBool(old bool) (bool, error) {
	if p.null() {
		return old, nil
	}
	switch {
	case p.literal("true"):
		p.i += 4
		return true, nil
	case p.literal("false"):
		p.i += 5
		return false, nil
	}
	return old, p.fail("want a boolean, got %s", p.describe())
}

func (p *parser) nullableStr(old string) (string, error) {
	if p.null() {
		return old, nil
	}
	return p.str()
}

// registers reads {"name": {"value": v, "status": s}, ...} into m.
func (p *parser) registers(m map[string]Register) error {
	return p.object(func(key []byte) error {
		name := p.internBytes(key)
		if p.null() {
			if _, ok := m[name]; !ok {
				m[name] = Register{}
			}
			return nil
		}
		var r Register // a repeated name replaces the earlier one whole, as in encoding/json
		p.reg = name
		err := p.object(func(k []byte) error {
			var err error
			switch string(k) {
			case "value":
				p.regSub = "value"
				r.Value, err = p.nullableInt(r.Value)
			case "status":
				p.regSub = "status"
				r.Status, err = p.nullableStr(r.Status)
			default:
				if strings.EqualFold(string(k), "value") || strings.EqualFold(string(k), "status") {
					p.regSub = string(k)
					return p.fail("not a field of a register (value, status)")
				}
				err = p.skipValue(1)
			}
			p.regSub = ""
			return err
		})
		if err != nil {
			return err
		}
		p.reg = ""
		m[name] = r
		return nil
	})
}

func (p *parser) internBytes(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = string(validUTF8(b))
	}
	p.intern[s] = s
	return s
}
