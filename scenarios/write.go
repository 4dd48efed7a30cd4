package scenarios

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Text is the scenario as a file, for a run folder to keep: the text it was loaded from (its
// comments and all, a design file written into it), or, for one built in Go, its YAML.
func (s *Scenario) Text() ([]byte, error) {
	if s.Source != nil {
		return s.Source, nil
	}
	return s.YAML()
}

// YAML writes the scenario as a file that Load reads back to the same scenario. It writes what
// the loader made of it: defaults filled in, lengths in TTLs resolved, a design file's program
// written inline (a run folder's copy must stand without it), settings old files gave at the top
// level in the server block. A field whose value is Go's zero is left out, as a file that does
// not write it gets exactly that value.
func (s *Scenario) YAML() ([]byte, error) {
	c := *s
	if c.design.Program != nil && c.LockSpec.Name == "" {
		c.LockSpec = LockSpec{Inline: c.design.Program}
	}
	root, err := toNode(reflect.ValueOf(c))
	if err != nil {
		return nil, fmt.Errorf("scenario %s as YAML: %w", s.Name, err)
	}
	flowEntries(root)
	root.HeadComment = c.Comment
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("scenario %s as YAML: %w", s.Name, err)
	}
	return b.Bytes(), enc.Close()
}

// MarshalYAML writes `lock:` as a scenario gives it: a name, a design file, or an inline design.
func (l LockSpec) MarshalYAML() (any, error) {
	if l.Inline != nil {
		n, err := toNode(reflect.ValueOf(*l.Inline))
		if n != nil {
			n.Style = yaml.FlowStyle
		}
		return n, err
	}
	if l.File != "" {
		return l.File, nil
	}
	return l.Name, nil
}

var nodeType = reflect.TypeOf(yaml.Node{})

// toNode is v as a YAML node, with every field that holds Go's zero value left out.
func toNode(v reflect.Value) (*yaml.Node, error) {
	if v.Type() == nodeType {
		n := v.Interface().(yaml.Node)
		return &n, nil
	}
	if m, ok := v.Interface().(yaml.Marshaler); ok {
		x, err := m.MarshalYAML()
		if n, isNode := x.(*yaml.Node); isNode || err != nil {
			return n, err
		}
		return leaf(x)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return toNode(v.Elem())
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		return n, fields(v, n)
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			c, err := toNode(v.Index(i))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Pointer {
			n.Style = yaml.FlowStyle // [a, b, c]
		}
		return n, nil
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			c, err := toNode(v.MapIndex(k))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(k)}, c)
		}
		return n, nil
	}
	return leaf(v.Interface())
}

// fields adds the struct v's fields to the mapping n, as yaml names them: inline ones in place,
// none that holds its zero value, none yaml leaves out ("-", unexported).
func fields(v reflect.Value, n *yaml.Node) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() || v.Field(i).IsZero() {
			continue
		}
		if strings.Contains(opts, "inline") {
			if err := fields(reflect.Indirect(v.Field(i)), n); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		c, err := toNode(v.Field(i))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, c)
	}
	return nil
}

// leaf is a scalar (or anything yaml encodes as it is) as a node.
func leaf(x any) (*yaml.Node, error) {
	var n yaml.Node
	return &n, n.Encode(x)
}

// flowEntries writes each nemesis entry and each client's clock on one line, as files do.
func flowEntries(root *yaml.Node) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "nemesis":
			for _, e := range root.Content[i+1].Content {
				if len(e.Content) == 2 && e.Content[0].Value == "random" {
					e = e.Content[1] // - random: {faults: [...], ...}
				}
				e.Style = yaml.FlowStyle
			}
		case "clocks":
			for j := 1; j < len(root.Content[i+1].Content); j += 2 {
				root.Content[i+1].Content[j].Style = yaml.FlowStyle
			}
		}
	}
}

// MarshalYAML writes a nemesis entry as a file does: a random package, or a planned fault's
// common fields followed by its kind's own parameters, all on one level.
func (e Entry) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if e.Random != nil {
		r, err := toNode(reflect.ValueOf(*e.Random))
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "random"}, r)
		return n, nil
	}
	if err := fields(reflect.ValueOf(e.Fault), n); err != nil {
		return nil, err
	}
	if e.Params != nil {
		if p := reflect.Indirect(reflect.ValueOf(e.Params)); p.Kind() == reflect.Struct {
			if err := fields(p, n); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}
