// Package yamlpos says where fields are written in a YAML document, so errors about a file a user
// wrote (a scenario, an endpoints file) can name the line as well as the field.
package yamlpos

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Index maps dotted field paths ("nemesis[0].target", "nodes.n1.ports") to the line where each
// is written.
type Index map[string]int

// New indexes the fields of a parsed document (none for nil: a scenario built in Go has no lines).
func New(root *yaml.Node) Index {
	idx := Index{}
	if root == nil {
		return idx
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := n.Content[i].Value
				if path != "" {
					p = path + "." + p
				}
				idx[p] = n.Content[i].Line
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				idx[p] = c.Line
				walk(c, p)
			}
		}
	}
	walk(root, "")
	return idx
}

// Line finds the line of a field, or of its nearest written parent (a missing field is reported
// where its parent is); 0 when none is written.
func (idx Index) Line(field string) int {
	for p := field; p != ""; {
		if l, ok := idx[p]; ok {
			return l
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut < 0 {
			break
		}
		p = p[:cut]
	}
	return 0
}

// FieldAt names the deepest field written on a line.
func (idx Index) FieldAt(line int) string {
	best := ""
	for p, l := range idx {
		if l == line && len(p) > len(best) {
			best = p
		}
	}
	return best
}

var lineMsg = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// LineOf splits one of yaml.v3's "line N: message" messages (with or without "yaml: " before it)
// into N and the message; ok is false for a message that names no line.
func LineOf(msg string) (line int, rest string, ok bool) {
	g := lineMsg.FindStringSubmatch(msg)
	if g == nil {
		return 0, "", false
	}
	line, _ = strconv.Atoi(g[1])
	return line, g[2], true
}

// Relined puts a syntax error of yaml.v3 on the line where the problem is. yaml.v3 names a line
// of the enclosing block: a stray word after a quoted value on line 3 of a scenario is "line 2:
// did not find expected key". The problem's line is the first one from
// which every longer prefix of the document fails to parse (a prefix that ends inside an open
// flow collection fails too, but one that closes it parses again). Other errors, and documents
// whose every prefix parses, are returned as they are.
func Relined(src []byte, err error) error {
	var te *yaml.TypeError
	if err == nil || errors.As(err, &te) {
		return err
	}
	reported, msg, ok := LineOf(err.Error())
	if !ok {
		return err
	}
	lines := strings.SplitAfter(string(src), "\n")
	fails := func(n int) bool {
		var v any
		return yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &v) != nil
	}
	if !fails(len(lines)) {
		return err
	}
	line := len(lines)
	for line > 1 && fails(line-1) {
		line--
	}
	if line == reported {
		return err
	}
	return fmt.Errorf("yaml: line %d: %s", line, msg)
}
