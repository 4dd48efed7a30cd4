//go:build !mutants

package locks

// registerMutants has nothing to register: the mutants are built only with the "mutants" tag.
func registerMutants() {}
