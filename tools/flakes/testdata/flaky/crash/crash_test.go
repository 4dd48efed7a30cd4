package crash

import (
	"os"
	"testing"

	"flaky"
)

// The second run's binary dies in the middle of this test: no test reports a failure.
func TestDiesOnSecondRun(t *testing.T) {
	t.Log("about to check the run counter")
	if flaky.Bump("crash") == 2 {
		os.Exit(3)
	}
}
