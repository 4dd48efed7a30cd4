package history

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestWrittenEventsReadBackInTimeOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(Event{Time: 20, Process: "client-1", Type: OK, F: Acquire, Op: 1, Token: TokenOf(7)})
	w.Append(Event{Time: 10, Process: "client-1", Type: Invoke, F: Acquire, Op: 1})
	w.Append(Event{Time: 25, Process: "client-1", Type: Invoke, F: Read, Op: 2, CS: 1})
	w.Append(Event{Time: 30, Process: "client-1", Type: OK, F: Read, Op: 2, CS: 1,
		Registers: map[string]Register{"unfenced": {Value: 3, Status: Accepted}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || events[0].Type != Invoke || events[1].Type != OK || *events[1].Token != 7 {
		t.Fatalf("unexpected events: %+v", events)
	}
	if events[3].Registers["unfenced"].Value != 3 {
		t.Fatalf("registers lost: %+v", events[3])
	}
}

func TestATornLastLineIsIgnoredButATornMiddleLineIsAnError(t *testing.T) {
	good := `{"t":1,"process":"client-1","type":"invoke","f":"acquire","op":1}` + "\n"
	torn := `{"t":2,"process":"cli`
	events, err := Decode(strings.NewReader(good + torn))
	if err != nil || len(events) != 1 {
		t.Fatalf("torn last line: events=%v err=%v", events, err)
	}
	_, err = Decode(strings.NewReader(good + torn + "\n" + good))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

func TestNowIsMonotonic(t *testing.T) {
	a := Now()
	b := Now()
	if b < a {
		t.Fatalf("CLOCK_MONOTONIC went backwards: %d then %d", a, b)
	}
}

func TestCreateFailsWithThePath(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "missing", "h.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("want error naming the path, got %v", err)
	}
}
