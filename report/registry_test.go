package report

// What this package's tests run on, registered here as a program would (lockcheck's main).
import (
	_ "github.com/lockcheck/lockcheck/providers/local"
	_ "github.com/lockcheck/lockcheck/services/all"
)
