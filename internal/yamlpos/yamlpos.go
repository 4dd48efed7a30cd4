// Package yamlpos says where fields are written in a YAML document, so errors about a file a user
// wrote (a scenario, an endpoints file) can name the line as well as the field.
package yamlpos

import (
	"fmt"
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
