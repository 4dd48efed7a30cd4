package locks

import "sync"

// Mutant is a design with one bug, and the shipped design it was made from (mutants.go).
type Mutant struct {
	Design   Design
	Original string // the shipped design's name
	Bug      string // the one thing that differs, in a sentence
}

var (
	mutants     []Mutant
	mutantsOnce sync.Once
)

// Mutants registers the mutant designs (once; after every shipped design's init, whose registry
// entries they copy) and lists them: none in a binary built without the "mutants" tag. The
// mutants tool calls it first, in the controller and in its workers alike.
func Mutants() []Mutant {
	mutantsOnce.Do(registerMutants)
	return mutants
}
