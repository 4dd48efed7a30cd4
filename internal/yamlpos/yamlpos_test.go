package yamlpos

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestRelinedNamesTheProblemsLine(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"stray word after a quoted value", "name: x\nlock: set-nx-px\ndescription: \"abc\" def\nclients: 2\n",
			"yaml: line 3: did not find expected key"},
		{"unterminated quote", "name: x\nlock: a\ndescription: \"abc\nclients: 2\n",
			"yaml: line 3: found unexpected end of stream"},
		{"error after a flow list spread over lines", "a: [1,\n  2]\nb: 1\nc: \"x\" y\n",
			"yaml: line 4: did not find expected key"},
		{"tab indentation", "a:\n\tb: 1\n", "yaml: line 2: found character that cannot start any token"},
	}
	for _, c := range cases {
		var v any
		err := Relined([]byte(c.src), yaml.Unmarshal([]byte(c.src), &v))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
}

func TestRelinedLeavesOtherErrors(t *testing.T) {
	if Relined([]byte("a: 1\n"), nil) != nil {
		t.Fatal("a nil error became one")
	}
	var v struct{ A int }
	src := []byte("a: notanumber\n")
	err := yaml.Unmarshal(src, &v)
	if err == nil || Relined(src, err) != err {
		t.Fatalf("a type error changed: %v", Relined(src, err))
	}
}
