package postgres

// SetTemplateCache points the initdb templates at dir for a test.
func SetTemplateCache(dir string) func() {
	old := templateCache
	templateCache = dir
	return func() { templateCache = old }
}
