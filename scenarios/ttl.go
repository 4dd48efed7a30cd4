package scenarios

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/internal/yamltime"
)

var durationType = reflect.TypeOf(yamltime.Duration(0))

// resolveTTLs turns every duration written in TTLs ("4ttl") into an absolute one, using the
// scenario's ttl (for ZooKeeper, the session timeout). A relative duration needs a ttl, and the
// ttl itself and the servers' own settings cannot be relative.
func (s *Scenario) resolveTTLs() []*Error {
	var errs []*Error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &Error{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	if n, ok := s.TTL.Relative(); ok {
		bad("ttl", "the ttl is what %gttl would be measured in: give it in time units (e.g. 500ms)", n)
		s.TTL = 0
		return errs
	}
	eachDuration(reflect.ValueOf(s).Elem(), "", func(field string, d *yamltime.Duration) {
		if _, ok := d.Relative(); !ok {
			return
		}
		if s.TTL == 0 {
			bad(field, "%s is relative to the ttl, but this scenario sets none: give ttl, or write %s in time "+
				"units", d, strings.TrimPrefix(field[strings.LastIndex(field, ".")+1:], "."))
			*d = 0
			return
		}
		*d = d.Resolve(s.TTL.D())
	})
	eachScalar(&s.Server, "server", func(field string, n *yaml.Node) {
		if strings.HasSuffix(strings.TrimSpace(n.Value), "ttl") {
			bad(field, "%q: the servers' settings are given in time units (e.g. 500ms), not in TTLs", n.Value)
			n.Value = "0s" // reported; the service kind checks the rest of its settings
		}
	})
	return errs
}

// eachDuration calls fn for every Duration reachable from v, with its dotted field path as
// scenario files write it ("nemesis[0].for", "nemesis[1].random.max_for").
func eachDuration(v reflect.Value, path string, fn func(string, *yamltime.Duration)) {
	if v.Type() == durationType {
		fn(path, v.Addr().Interface().(*yamltime.Duration))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			eachDuration(v.Elem(), path, fn)
		}
	case reflect.Interface: // a value held in one is not addressable: copy, resolve, store back
		if !v.IsNil() {
			elem := reflect.New(v.Elem().Type()).Elem()
			elem.Set(v.Elem())
			eachDuration(elem, path, fn)
			v.Set(elem)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // the file's text
			return
		}
		for i := 0; i < v.Len(); i++ {
			eachDuration(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case reflect.Map: // map values are not addressable: copy, resolve, store back
		iter := v.MapRange()
		for iter.Next() {
			elem := reflect.New(v.Type().Elem()).Elem()
			elem.Set(iter.Value())
			eachDuration(elem, join(path, fmt.Sprint(iter.Key())), fn)
			v.SetMapIndex(iter.Key(), elem)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			// A field yaml leaves out is skipped, but for an interface: it holds what was decoded
			// from the fields beside it (a fault kind's parameters, nemesis.Fault.Params).
			if !sf.IsExported() || (name == "-" && sf.Type.Kind() != reflect.Interface) || sf.Type == reflect.TypeOf(yaml.Node{}) {
				continue
			}
			p := path
			switch {
			case strings.Contains(opts, "inline") || sf.Type.Kind() == reflect.Interface:
			case name != "":
				p = join(path, name)
			default:
				p = join(path, strings.ToLower(sf.Name))
			}
			eachDuration(v.Field(i), p, fn)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// eachScalar calls fn for every scalar under a YAML node, with its dotted path.
func eachScalar(n *yaml.Node, path string, fn func(field string, n *yaml.Node)) {
	switch n.Kind {
	case yaml.ScalarNode:
		fn(path, n)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			eachScalar(n.Content[i+1], join(path, n.Content[i].Value), fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			eachScalar(c, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case yaml.DocumentNode:
		for _, c := range n.Content {
			eachScalar(c, path, fn)
		}
	}
}
