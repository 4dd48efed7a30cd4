package broken

import "testing"

// This package does not compile (a type error): a build failure must be listed too.
var notAnInt int = "text"

func TestNeverRuns(t *testing.T) {}
