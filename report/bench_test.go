package report_test

import (
	"testing"

	"github.com/lockcheck/lockcheck/report"
)

// Writing the report of a real run (the K2 pause, 3 s, 4 clients): it runs at the end of every
// run and check, so it must stay well under a second.
func BenchmarkWriteRealRun(b *testing.B) {
	r, err := realRuns()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := report.Write(r.pause.Dir); err != nil {
			b.Fatal(err)
		}
	}
}
