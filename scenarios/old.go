package scenarios

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/lockcheck/lockcheck/locks"
)

// OldSettings are Redis's server settings as scenario files wrote them at the top level, before
// each kind of service owned its settings (`replicas: 1` rather than `server: {replicas: 1}`).
// Files written that way still load: the loader moves them into the server block, for Redis,
// and refuses them, at their own line, for any other service.
type OldSettings struct {
	Persistence yaml.Node `yaml:"persistence"`
	Replicas    yaml.Node `yaml:"replicas"`
	Sentinels   yaml.Node `yaml:"sentinels"`
}

// moveOldSettings moves the settings written at the top level into the server block, where the
// Redis kind reads them, and remembers where each came from so that its errors name its own line.
func (s *Scenario) moveOldSettings() []*Error {
	var errs []*Error
	for _, o := range []struct {
		name string
		node *yaml.Node
	}{{"persistence", &s.Old.Persistence}, {"replicas", &s.Old.Replicas}, {"sentinels", &s.Old.Sentinels}} {
		if o.node.Kind == 0 {
			continue
		}
		value := *o.node
		*o.node = yaml.Node{}
		switch {
		case !s.lockOK: // the lock's own error says enough
		case s.Service() != locks.Redis:
			errs = append(errs, &Error{Field: o.name, Msg: fmt.Sprintf("applies to Redis lock nodes only; %s runs on %s", s.Lock, s.Service())})
		case s.Server.Kind != 0 && s.Server.Kind != yaml.MappingNode: // the server block's own error says enough
		case serverSetting(&s.Server, o.name) != nil:
			errs = append(errs, &Error{Field: o.name, Msg: fmt.Sprintf("given twice: here and as server.%s; write it once, in server:", o.name)})
		default:
			if s.Server.Kind == 0 {
				s.Server = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: value.Line}
			}
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: o.name, Line: value.Line}
			s.Server.Content = append(s.Server.Content, key, &value)
			if s.moved == nil {
				s.moved = map[string]string{}
			}
			s.moved["server."+o.name] = o.name
		}
	}
	return errs
}

// serverSetting is the value of a setting in a server block, or nil.
func serverSetting(server *yaml.Node, name string) *yaml.Node {
	if server.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(server.Content); i += 2 {
		if server.Content[i].Value == name {
			return server.Content[i+1]
		}
	}
	return nil
}
