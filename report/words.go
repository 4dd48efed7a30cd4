package report

import "github.com/lockcheck/lockcheck/checker"

// headline is the verdict in a few words, and how alarming it is.
type headline struct {
	Text  string
	Class string // "unsafe", "damaged", "safe", "unknown"
}

func verdictHeadline(v checker.Verdict) headline {
	class := map[checker.Outcome]string{checker.Safe: "safe", checker.Damaged: "damaged", checker.Starved: "damaged", checker.Rescued: "unsafe", checker.Unsafe: "unsafe",
		checker.Broken: "unsafe"}[checker.Judge(v).Outcome]
	if class == "" {
		class = "unknown"
	}
	return headline{checker.Headline(v), class}
}
