package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzScan: any bytes give events or an error naming a line that exists; never a panic or a
// hang. What the decoder accepts, encoding/json reads the same way; what Scan hands over passes
// its own checks and reads back the same once written again.
//
//	go test -run '^$' -fuzz FuzzScan -fuzztime 3m ./history/
func FuzzScan(f *testing.F) {
	for _, seed := range []string{
		`{"t":1,"process":"client-1","type":"invoke","f":"read","op":1}` + "\n" +
			`{"t":2,"process":"client-1","type":"ok","f":"read","op":1,"cs":1,"token":3,"registers":{"unfenced":{"value":3,"status":"ok"}}}` + "\n",
		`{"t":3,"process":"nemesis","type":"invoke","f":"partition","op":2,"target":"client-2","nodes":["n1"],"duration":5,"offset":-1,"rate":1.5}` + "\n",
		`{"t":4,"process":"controller","type":"note","f":"end","error":"a \"b\" \u00e9"}`,
		`{"t":5,"process":"resource","type":"note","f":"final","registers":{"a":{"value":1}},"seq":2,"pass":1,"point":"p","role":"read"}` + "\n{",
		"\n\n{}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var events []Event
		err := Scan(bytes.NewReader(data), func(_ int, e *Event) error {
			events = append(events, e.Clone())
			return nil
		})
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("an error that names no line: %v", err)
			}
			if lines := bytes.Count(data, []byte("\n")) + 1; le.Line < 1 || le.Line > lines {
				t.Fatalf("error names line %d of %d: %v", le.Line, lines, err)
			}
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error does not start with its line: %v", err)
			}
		}
		// Line by line: whatever the decoder accepts, encoding/json accepts and reads the same.
		for _, line := range bytes.Split(data, []byte("\n")) {
			p := &parser{intern: map[string]string{}}
			var got Event
			if _, perr := p.parseEvent(line, &got, nil); perr != nil {
				continue
			}
			want, jerr := viaEncodingJSON(line)
			if jerr != nil {
				t.Fatalf("decoder accepted what encoding/json refuses (%v): %q", jerr, line)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\n decoder      %+v\n encoding/json %+v", line, got, want)
			}
		}
		if err != nil {
			return
		}
		// Written again and read back: the same events.
		var buf bytes.Buffer
		for _, e := range events {
			line, merr := json.Marshal(e)
			if merr != nil {
				t.Fatal(merr)
			}
			buf.Write(append(line, '\n'))
		}
		var again []Event
		if err := Scan(&buf, func(_ int, e *Event) error { again = append(again, e.Clone()); return nil }); err != nil {
			t.Fatalf("events Scan handed over do not read back: %v", err)
		}
		if len(again) != len(events) {
			t.Fatalf("%d events read back as %d", len(events), len(again))
		}
		for i := range events {
			a, b := events[i], again[i]
			a.Params, b.Params = compact(a.Params), compact(b.Params) // written again compacted
			if len(a.Registers) == 0 && len(b.Registers) == 0 {
				a.Registers, b.Registers = nil, nil
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d read back differently:\n %+v\n %+v", i, a, b)
			}
		}
	})
}

// compact is params without insignificant spaces, as json.Marshal writes them.
func compact(params json.RawMessage) json.RawMessage {
	if params == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, params); err != nil {
		return params
	}
	return b.Bytes()
}
