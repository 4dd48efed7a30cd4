package flaky

import "testing"

func TestSteady(t *testing.T) {}

func TestFailsOnEvenRuns(t *testing.T) {
	if n := Bump("even"); n%2 == 0 {
		t.Fatalf("run %d is even", n)
	}
}

func TestWithSubtests(t *testing.T) {
	n := Bump("sub")
	t.Run("steady", func(t *testing.T) {})
	t.Run("third", func(t *testing.T) {
		if n == 3 {
			t.Errorf("third run fails")
		}
	})
}
