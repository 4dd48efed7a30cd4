package history

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fullEvent has every field of Event set, so that a field the decoder forgets shows.
func fullEvent() Event {
	return Event{Time: 123456789, Process: "client-3", Type: OK, F: Write, Op: 7, CS: 3, Token: TokenOf(-42),
		Registers: map[string]Register{"unfenced": {Value: 5, Status: Accepted}, "fenced-rw": {Value: -1, Status: Rejected}},
		Role:      "write", Params: json.RawMessage(`{"nodes":["n1","n2"],"offset":-2000000000,"rate":1.1}`), Target: "n4", As: "holder",
		Point: "before-write", Pass: 2, Duration: 1500e6, Error: `i/o timeout "quoted" <b> é`, Design: "zk@v1.0.1", Seq: 99,
		Server: "etcd 3.4.3 (built from go.etcd.io/etcd@v0.0.0-x)", Promise: 400e6, Since: 123000000, Session: "lease 7f3a",
		Rule: &PromiseRule{Words: "the lease", Slack: 1e9, ClientClocks: true, Connection: true}, Weakness: "clock"}
}

// viaEncodingJSON reads a line as the decoder must: as encoding/json reads it into an Event, with
// the legacyParams keys gathered into Params, in their order, when the line has no params (a null
// one left out, the last of a repeated one kept).
func viaEncodingJSON(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil || e.Params != nil {
		return e, err
	}
	var old struct {
		Nodes   json.RawMessage `json:"nodes"`
		Offset  json.RawMessage `json:"offset"`
		Rate    json.RawMessage `json:"rate"`
		Latency json.RawMessage `json:"latency"`
	}
	if err := json.Unmarshal(line, &old); err != nil {
		return e, err
	}
	var parts []string
	for i, v := range []json.RawMessage{old.Nodes, old.Offset, old.Rate, old.Latency} {
		if v != nil && string(v) != "null" {
			parts = append(parts, `"`+legacyParams[i]+`":`+string(v))
		}
	}
	if parts != nil {
		e.Params = json.RawMessage("{" + strings.Join(parts, ",") + "}")
	}
	return e, nil
}

// The decoder must know every field of Event: a field added to Event and not to the decoder would
// be dropped silently from every history read.
func TestEveryFieldOfEventIsDecoded(t *testing.T) {
	e := fullEvent()
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullEvent leaves %s unset: set it, and decode it in parse.go", v.Type().Field(i).Name)
		}
	}
	line, _ := json.Marshal(e)
	got, err := Decode(strings.NewReader(string(line) + "\n"))
	if err == nil {
		// The completion has no invoke: add one in front.
		t.Fatalf("a completion without its invoke was accepted")
	}
	inv := Event{Time: 1, Process: e.Process, Type: Invoke, F: e.F, Op: e.Op}
	invLine, _ := json.Marshal(inv)
	got, err = Decode(strings.NewReader(string(invLine) + "\n" + string(line) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[1], e) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", got[1], e)
	}
}

// On lines encoding/json can read, the decoder reads the same event: null fields, escapes,
// whitespace, unknown keys, repeated keys, invalid UTF-8.
func TestDecoderAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"t":1,"process":"client-1","type":"invoke","f":"read","op":1}`,
		` { "t" : 2 , "process" : "client-1" , "type" : "ok" , "f" : "read" , "op" : 1 , "registers" : { "unfenced" : { "value" : 3 , "status" : ` +
			`"ok" } } } `,
		`{"t":3,"process":"nemesis","type":"invoke","f":"pause","op":0,"target":"client-2","nodes":[],"duration":null,"token":null}`,
		`{"t":4,"process":"nemesis","type":"ok","f":"partition","nodes":["n1","n\u00e9"],"error":"a \"b\"\n\\c\u2028 \ud83d\ude00",` +
			`"new-field":{"x":[1,2,{"y":null}],"z":true}}`,
		`{"t":5,"process":"controller","type":"note","f":"start","registers":{"a":{"value":1},"a":{"status":"ok"},"b":null},"rate":1e-3}`,
		`{"t":6,"process":"controller","type":"note","f":"end","t":7,"error":"x","error":null,"pass":-0}`,
		"{\"t\":8,\"process\":\"cli\xffent\",\"type\":\"note\",\"f\":\"lost\",\"error\":\"\xc3\x28\"}",
		`{"t":9,"process":"controller","type":"note","f":"start","offset":-9223372036854775808,"seq":9223372036854775807,"rate":-0.0}`,
		`{"t":10,"process":"nemesis","type":"invoke","f":"delay","params": { "nodes" : ["n1"], "latency": 5 , "new":{"x":null}} ,"offset":3}`,
		`{"t":11,"process":"nemesis","type":"ok","f":"clock","params":null,"rate":1}`,
		`{"t":12,"process":"nemesis","type":"ok","f":"clock","latency":4,"rate":null,"offset":1,"nodes":null,"offset":2}`,
		`{"t":13,"process":"controller","type":"note","f":"design","target":"client-1","design":"x","rule":{"words":"w","slack_ns":5,` +
			`"client_clocks":true,"connection":false,"new":[1]},"rule":{"connection":true,"words":null}}`,
		`{"t":14,"process":"client-1","type":"ok","f":"renew","op":2,"promise_ns":-1,"since_ns":3,"session":"s","rule":null}`,
		`{"t":15,"process":"nemesis","type":"invoke","f":"clock","op":1,"target":"n1","weakness":"clock"}`,
	}
	for _, line := range lines {
		want, err := viaEncodingJSON([]byte(line))
		if err != nil {
			t.Fatalf("encoding/json rejects %s: %v", line, err)
		}
		p := &parser{intern: map[string]string{}}
		var got Event
		if _, err := p.parseEvent([]byte(line), &got, nil); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", line, got, want)
		}
	}
}

// Random events, written as the harness writes them, read back the same.
func TestRandomEventsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "client-1", "n1", "ok", "x\"y", "é", "<&>", "\t"}
	for range 2000 {
		e := Event{Time: rng.Int64(), Process: words[rng.IntN(len(words))], Type: Type(words[rng.IntN(len(words))]),
			F: words[rng.IntN(len(words))], Op: rng.Int64N(9) - 4, CS: rng.Int64(), Role: words[rng.IntN(len(words))],
			Target: words[rng.IntN(len(words))], Point: words[rng.IntN(len(words))], Pass: rng.IntN(5),
			Duration: rng.Int64(), Error: words[rng.IntN(len(words))], Seq: rng.Int64N(100)}
		if rng.IntN(2) == 0 {
			e.Token = TokenOf(rng.Int64() - rng.Int64())
		}
		if rng.IntN(2) == 0 {
			e.Registers = map[string]Register{}
			for range rng.IntN(4) {
				e.Registers[words[1+rng.IntN(len(words)-1)]] = Register{Value: rng.Int64() - rng.Int64(), Status: words[rng.IntN(len(words))]}
			}
		}
		if rng.IntN(3) == 0 {
			params, _ := json.Marshal(
				map[string]any{"nodes": []string{words[rng.IntN(len(words))]}, "offset": -rng.Int64(), "rate": rng.Float64() * 3},
			)
			e.Params = params
		}
		line, _ := json.Marshal(e)
		var want Event
		_ = json.Unmarshal(line, &want) // e's empty Registers read back as nil
		p := &parser{intern: map[string]string{}}
		var got Event
		if _, err := p.parseEvent(line, &got, nil); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", line, got, want)
		}
	}
}

// Every malformed line is an error naming the file, the line and what is wrong with it, never a
// line dropped or an event guessed.
func TestMalformedLinesAreErrorsNamingFileLineAndField(t *testing.T) {
	const inv = `{"t":1,"process":"client-1","type":"invoke","f":"read","op":1}`
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{
			"time of the wrong type",
			[]string{inv, `{"t":"soon","process":"client-1","type":"ok","f":"read","op":1}`},
			`:2: field "t": want an integer, got a string`,
		},
		{
			"a fraction for an integer",
			[]string{`{"t":1.5,"process":"client-1","type":"invoke","f":"read","op":1}`},
			`:1: field "t": want an integer, got 1.5`,
		},
		{
			"an integer out of range",
			[]string{`{"t":99999999999999999999,"process":"c","type":"note","f":"x"}`},
			`:1: field "t": integer 99999999999999999999 out of range`,
		},
		{
			"a register value of the wrong type",
			[]string{inv, `{"t":2,"process":"client-1","type":"ok","f":"read","op":1,"registers":{"unfenced":{"value":"3","status":"ok"}}}`},
			`:2: field "registers.unfenced.value": want an integer, got a string`,
		},
		{
			"a token of the wrong type",
			[]string{`{"t":1,"process":"client-1","type":"invoke","f":"acquire","op":1,"token":true}`},
			`:1: field "token": want an integer, got a boolean`,
		},
		{
			"nodes not a list",
			[]string{`{"t":1,"process":"nemesis","type":"invoke","f":"partition","nodes":"n1"}`},
			`:1: field "nodes": want '[', got a string`,
		},
		{
			"an old offset of the wrong type",
			[]string{`{"t":1,"process":"nemesis","type":"invoke","f":"clock","offset":"2s"}`},
			`:1: field "offset": want an integer, got a string`,
		},
		{
			"params not an object",
			[]string{`{"t":1,"process":"nemesis","type":"invoke","f":"clock","params":[1]}`},
			`:1: field "params": want an object, got an array`,
		},
		{
			"params not JSON",
			[]string{`{"t":1,"process":"nemesis","type":"invoke","f":"clock","params":{"offset":1,}}`},
			`:1: field "params": want a key, got '}'`,
		},
		{"a missing field", []string{`{"t":1,"process":"client-1","type":"invoke","op":1}`}, `:1: field "f": missing`},
		{"an unknown type", []string{`{"t":1,"process":"client-1","type":"done","f":"read","op":1}`}, `:1: field "type": "done" is not one of ` +
			`invoke, ok, fail, info, note`},
		{"an unknown register " +
			"status", []string{inv, `{"t":2,"process":"client-1","type":"ok","f":"read","op":1,"registers":{"unfenced":{"value":3,` +
			`"status":"maybe"}}}`}, `:2: field "registers.unfenced.status": "maybe" is not one of`},
		{"an access that took effect without " +
			"registers", []string{inv, `{"t":2,"process":"client-1","type":"ok","f":"read","op":1}`}, `:2: field "registers": a read that took ` +
			`effect must say what it read or wrote`},
		{"the resource's log entry without " +
			"registers", []string{`{"t":2,"process":"resource","type":"note","f":"write","target":"client-1","seq":1}`}, `:1: field "registers": a ` +
			`write that took effect`},
		{"a completion without its " +
			"invoke", []string{`{"t":2,"process":"client-1","type":"ok","f":"acquire","op":5}`, inv}, `:1: field "op": a completion (ok acquire) of ` +
			`client-1's op 5, which no line invokes`},
		{"an op invoked twice", []string{inv, inv}, `:2: field "op": client-1 invokes op 1 again (line 1) before it completed`},
		{"a completion of another " +
			"kind", []string{inv, `{"t":2,"process":"client-1","type":"ok","f":"write","op":1,"registers":{"u":{"value":1,` +
			`"status":"ok"}}}`}, `:2: field "f": client-1's op 1 is invoked as read (line 1) but completes as write (line 2)`},
		{"a completion before its " +
			"invoke", []string{`{"t":5,"process":"client-1","type":"invoke","f":"release","op":2}`, `{"t":4,"process":"client-1","type":"ok",` +
			`"f":"release","op":2}`}, `:2: field "t": client-1's op 2 completes (line 2) before it was invoked (line 1)`},
		{"a client op without its number", []string{`{"t":1,"process":"client-1","type":"invoke","f":"read"}`}, `:1: field "op": missing`},
		{"not JSON", []string{inv, `t=1 process=client-1`}, `:2: want '{', got 't'`},
		{"garbage after the event", []string{inv + ` {}`}, `:1: unexpected an object after the event's closing brace`},
		{"a bad last line with its newline", []string{inv, `{"t":2,"process":`}, `:2: `},
		{"an over-long line", []string{`{"t":1,"process":"c","type":"note","f":"x",` +
			`"error":"` + strings.Repeat("a", MaxLineBytes) + `"}`}, `:1: longer than 1048576 bytes`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(c.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if err == nil || !strings.Contains(err.Error(), path+c.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, path+c.want)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Path != path {
				t.Fatalf("not a LineError naming the file: %#v", err)
			}
		})
	}
}

// Only the last line, cut short without its newline, is forgiven: a crash while writing it.
func TestOnlyAnUnterminatedLastLineIsForgiven(t *testing.T) {
	good := `{"t":1,"process":"client-1","type":"invoke","f":"acquire","op":1}`
	events, err := Decode(strings.NewReader(good + "\n" + `{"t":2,"process":"client-1","ty`))
	if err != nil || len(events) != 1 {
		t.Fatalf("torn last line: %v, %d events", err, len(events))
	}
	if _, err := Decode(strings.NewReader(good + "\n" + `{"t":2,"process":"client-1","ty` + "\n")); err == nil {
		t.Fatal("a complete but malformed last line was forgiven")
	}
	if events, err := Decode(strings.NewReader("\n\n" + good + "\n\n")); err != nil || len(events) != 1 {
		t.Fatalf("blank lines: %v, %d events", err, len(events))
	}
}

// Scan hands over events in file order with their line numbers, reusing one event.
func TestScanGivesLineNumbersInFileOrder(t *testing.T) {
	in := `{"t":5,"process":"controller","type":"note","f":"start"}` + "\n\n" +
		`{"t":3,"process":"client-1","type":"invoke","f":"acquire","op":1}` + "\n"
	var lines []int
	var times []int64
	err := Scan(strings.NewReader(in), func(line int, e *Event) error {
		lines, times = append(lines, line), append(times, e.Time)
		return nil
	})
	if err != nil || !reflect.DeepEqual(lines, []int{1, 3}) || !reflect.DeepEqual(times, []int64{5, 3}) {
		t.Fatalf("lines %v times %v err %v", lines, times, err)
	}
	stop := errors.New("stop here")
	err = Scan(strings.NewReader(in), func(int, *Event) error { return stop })
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || !errors.Is(err, stop) {
		t.Fatalf("an error from fn: %v", err)
	}
}

// The Event fields the decoder knows are exactly Event's JSON keys and the old fault keys.
func TestEventFieldsListsEveryKey(t *testing.T) {
	var keys []string
	typ := reflect.TypeOf(Event{})
	for i := range typ.NumField() {
		keys = append(keys, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	keys = append(keys, legacyParams[:]...)
	if !reflect.DeepEqual(keys, eventFields) {
		t.Fatalf("Event's keys and the old fault keys %v, the decoder's %v", keys, eventFields)
	}
}

// A history written before faults kept their parameters in params reads as one written after:
// the old keys, as they were, in params; a line with params keeps its own.
func TestOldFaultKeysReadAsParams(t *testing.T) {
	old := `{"t":1,"process":"nemesis","type":"invoke","f":"delay","op":3,"target":"client-2","nodes":["n1","resource"],` +
		`"duration":300000000,"latency":150000000,"offset":7}` + "\n" +
		`{"t":2,"process":"nemesis","type":"invoke","f":"clock","op":4,"target":"n1","rate":1.5,"params":{"offset":9}}` + "\n" +
		`{"t":3,"process":"nemesis","type":"invoke","f":"pause","op":5,"target":"n2"}` + "\n"
	events, err := Decode(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"nodes":["n1","resource"],"offset":7,"latency":150000000}`, `{"offset":9}`, ``}
	for i, e := range events {
		if string(e.Params) != want[i] {
			t.Errorf("event %d: params %s, want %s", i+1, e.Params, want[i])
		}
	}
	if events[0].Duration != 300e6 || events[0].Target != "client-2" {
		t.Errorf("the common fields of an old line: %+v", events[0])
	}
}
