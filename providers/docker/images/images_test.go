package images

import (
	"slices"
	"strings"
	"testing"
)

// Every server type the services name has a Dockerfile, FROM the base, with the same tag every
// time; a type without one is an error that lists the known ones.
func TestEveryServerTypeHasAnImage(t *testing.T) {
	names := Names()
	for _, want := range []string{"redis", "zookeeper", "mariadb", "postgres", "etcd"} {
		if !slices.Contains(names, want) {
			t.Errorf("no Dockerfile for %s; have %v", want, names)
		}
		df, err := Dockerfile(want)
		if err != nil || !strings.Contains(string(df), "FROM ${BASE}") {
			t.Errorf("%s/Dockerfile does not build FROM the base: %v", want, err)
		}
		a, _ := Ref(want)
		b, _ := Ref(want)
		if a != b || !strings.HasPrefix(a, Repository+want+":") {
			t.Errorf("Ref(%s) = %q then %q", want, a, b)
		}
	}
	if _, err := Ref("oracle"); err == nil || !strings.Contains(err.Error(), "redis") {
		t.Errorf("an unknown server type: %v", err)
	}
}

// The base image fetches from the host's own Debian mirrors, read from either apt format.
func TestHostSourcesFromEitherFormat(t *testing.T) {
	deb822 := `Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb
Enabled: no
URIs: http://other.example/debian
Suites: bookworm
`
	s := pickSources(parseDeb822(deb822))
	if s.mirror != "http://mirror.example/debian" || s.security != "http://security.example/debian-security" {
		t.Fatalf("deb822: %+v", s)
	}
	one := "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\ndeb http://s.example/sec bookworm-security main\n"
	s = pickSources(parseOneLine(one))
	if s.mirror != "http://m.example/debian" || s.security != "http://s.example/sec" {
		t.Fatalf("one-line: %+v", s)
	}
	if lines := s.lines(); !strings.Contains(lines, "deb http://m.example/debian bookworm-updates main") {
		t.Fatalf("sources.list:\n%s", lines)
	}
	if (sources{}).lines() != "" {
		t.Fatal("no mirror found should leave debootstrap's own sources")
	}
}

// Every server type's packages are in the shared servers layer, and only a server type's.
func TestServersLayerHoldsEveryServerTypesPackages(t *testing.T) {
	df := serversDockerfile()
	for _, name := range Names() {
		pkgs, ok := Packages[name]
		if !ok || len(pkgs) == 0 {
			t.Errorf("server type %s has a Dockerfile but no Packages entry", name)
		}
		for _, p := range pkgs {
			if !strings.Contains(df, " "+p+" ") {
				t.Errorf("the servers layer does not install %s (for %s):\n%s", p, name, df)
			}
		}
	}
	for name := range Packages {
		if _, err := Dockerfile(name); err != nil {
			t.Errorf("Packages names %s, which has no Dockerfile: %v", name, err)
		}
	}
	if !strings.HasPrefix(df, "ARG BASE\nFROM ${BASE}\n") {
		t.Errorf("the servers layer is not FROM the base:\n%s", df)
	}
	if ref, _ := Ref("redis"); ref == ServersRef() || !strings.HasPrefix(ServersRef(), Repository+serversName+":") {
		t.Errorf("ServersRef() = %q, Ref(redis) = %q", ServersRef(), ref)
	}
}
