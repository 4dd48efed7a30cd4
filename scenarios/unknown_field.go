package scenarios

import (
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/internal/yamlpos"
)

// yaml.v3 reports a misspelt field as "field X not found in type pkg.T".
var unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)

// unknownField rewrites yaml.v3's message about a misspelt field into one that names the field
// as written and lists the valid ones, and places it on that field rather than on the first one
// of its line (a flow mapping writes several on one line). ok is false for other messages.
func unknownField(idx yamlpos.Index, line int, msg string) (field, out string, ok bool) {
	g := unknownFieldRE.FindStringSubmatch(msg)
	if g == nil {
		return "", "", false
	}
	name, typ := g[1], g[2]
	for p, l := range idx {
		if l == line && (p == name || strings.HasSuffix(p, "."+name)) && len(p) > len(field) {
			field = p
		}
	}
	out = "unknown field " + name
	if valid := yamlFields(typ); len(valid) > 0 {
		out += "; valid fields: " + strings.Join(valid, ", ")
	}
	return field, out, true
}

// yamlFields lists the YAML field names of the struct type named typ ("checker.CollateralExpect")
// found anywhere in a Scenario, inlined structs included; nil if there is none.
func yamlFields(typ string) []string {
	seen := map[reflect.Type]bool{}
	var found reflect.Type
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || found != nil {
			return
		}
		seen[t] = true
		if t.String() == typ {
			found = t
			return
		}
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeOf(Scenario{}))
	if found == nil {
		return nil
	}
	var names []string
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			switch {
			case name == "-" || (!f.IsExported() && !f.Anonymous):
			case strings.Contains(opts, "inline"):
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					collect(ft)
				}
			case name != "":
				names = append(names, name)
			default:
				names = append(names, strings.ToLower(f.Name))
			}
		}
	}
	collect(found)
	sort.Strings(names)
	return names
}
