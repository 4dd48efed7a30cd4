package locks

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The protocol hop alone: acquire + release through a lock program that answers at once and
// talks to no server, so a cycle is two request/answer round trips over the pipes. What an
// adapter's cycle costs beyond it is its library and its server.
//
//	go test -run '^$' -bench ProtocolHop -benchtime 2s ./locks/
func BenchmarkProtocolHop(b *testing.B) {
	path := filepath.Join(b.TempDir(), "hop.py")
	src := `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.write(json.dumps({"in_reply_to": req["id"], "type": "ok", "token": 1}) + "\n")
    sys.stdout.flush()
    if req["type"] == "close":
        break
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := StartProgram("hop", []string{"/usr/bin/python3", path}, "", nil,
		Env{Client: "client-1", Key: "k", TTL: time.Second, Timeout: time.Second, Point: func(string) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := l.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}
