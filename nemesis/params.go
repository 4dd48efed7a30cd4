package nemesis

// A kind's own parameters: decoded from a scenario's nemesis entry, checked to be the kind's,
// recorded in the history as a JSON object.

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// commonFields are the fields every planned fault has, as a scenario writes them ("for" is in
// Kind.Takes, as some kinds do not take it).
var commonFields = []string{"fault", "target", "at", "point", "occurrence", "by"}

// DecodeParams decodes the fields of a planned fault that are not common to every fault (own:
// the entry's other fields, by name) into the parameters of f's kind, and sets f.Params. Each is
// decoded from its own node, so errors keep the scenario's lines; problems are reported under
// the field's name, a field the kind does not take with the ones it does. It returns false when
// a value could not be decoded (the fault's parameters are then not worth checking). A kind this
// build does not know decodes nothing (Check says so); a field no kind takes is reported still.
func DecodeParams(f *Fault, own map[string]yaml.Node, bad Report) (decoded bool) {
	k, err := Lookup(f.Kind)
	if err != nil {
		for _, key := range slices.Sorted(maps.Keys(own)) {
			if !slices.ContainsFunc(kinds, func(k *Kind) bool { return slices.Contains(k.Takes, key) }) {
				bad(key, "unknown field %s; a fault takes %s, and its kind's own fields (lockcheck faults lists them)", key,
					strings.Join(append(slices.Clone(commonFields), "for"), ", "))
			}
		}
		return true
	}
	decoded = true
	var unknown []string
	f.Params, unknown = k.funcs.decode(own, func(field, format string, a ...any) {
		decoded = false
		bad(field, format, a...)
	})
	takes := "no other fields"
	if len(k.Takes) > 0 {
		takes = strings.Join(k.Takes, ", ")
	}
next:
	for _, key := range unknown {
		for _, other := range kinds {
			if slices.Contains(other.Takes, key) {
				bad(key, "%s does not apply to a %s fault (it takes %s)", key, k.Name, takes)
				continue next
			}
		}
		bad(key, "unknown field %s; a %s fault takes: %s", key, k.Name, strings.Join(append(slices.Clone(commonFields), k.Takes...), ", "))
	}
	return decoded
}

// decode decodes each of own into the field of P its yaml tag names, and lists, in the order
// they are written, the keys P has no field for.
func (s *spec[P]) decode(own map[string]yaml.Node, bad Report) (params any, unknown []string) {
	p := new(P)
	fields, _ := paramFields(p)
	keys := make([]string, 0, len(own))
	for key := range own {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool { // as written, so errors come in the file's order
		a, b := own[keys[i]], own[keys[j]]
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	})
	for _, key := range keys {
		field, ok := fields[key]
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		node := own[key]
		if err := node.Decode(field.Addr().Interface()); err != nil {
			bad(key, "%s", yamlMessage(err))
		}
	}
	return p, unknown
}

// yamlMessage is what a yaml decoding error says, without the line: the scenario loader places
// errors itself.
func yamlMessage(err error) string {
	msgs := []string{err.Error()}
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	}
	for i, m := range msgs {
		msgs[i] = yamlLine.ReplaceAllString(strings.TrimPrefix(m, "yaml: "), "")
	}
	return strings.Join(msgs, "; ")
}

var yamlLine = regexp.MustCompile(`^line \d+: `)

// paramsOf returns f's parameters as its kind's type P: the zero value when it has none.
func paramsOf[P any](f Fault) (P, error) {
	var zero P
	switch p := f.Params.(type) {
	case nil:
		return zero, nil
	case P:
		return p, nil
	case *P:
		if p == nil {
			return zero, nil
		}
		return *p, nil
	}
	return zero, fmt.Errorf("parameters of type %T do not belong to a %s fault (it takes %T)", f.Params, f.Kind, zero)
}

// paramFields maps the yaml names of a parameter struct's fields (p points to it) to the fields,
// and lists the names in the struct's order.
func paramFields(p any) (map[string]reflect.Value, []string) {
	v := reflect.ValueOf(p).Elem()
	out := map[string]reflect.Value{}
	var names []string
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = v.Field(i)
		names = append(names, name)
	}
	return out, names
}

// recorded is how the history keeps parameters (a kind's P): its JSON object, nil when it has
// nothing to say.
func recorded(p any) json.RawMessage {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("nemesis: parameters %T do not marshal: %v", p, err)) // plain data: cannot happen
	}
	if string(b) == "{}" || string(b) == "null" {
		return nil
	}
	return b
}
