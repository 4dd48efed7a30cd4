package scenarios

// shipped.go: the shipped scenarios are built into lockcheck, so `lockcheck run NAME` works from
// any folder, and a name is found in a subfolder (debate/, db/, byol/, ...) as well as at the top.
//
// What a name means, in order (Resolve):
//  1. an existing file, as given (relative to the current folder);
//  2. a scenario of the current folder's own scenarios/ (a project's own, or this repository's,
//     where an edited file wins over the copy built into the binary);
//  3. a shipped scenario.
//
// A shipped scenario runs from a copy of the whole shipped tree written once per version into the
// user's cache folder, so paths inside it (a design file, a program) resolve as they do in the
// repository.

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The shipped scenarios: every .yaml file here and one folder down, and the debate's stored
// repeatability figures. TestShippedEmbedsEveryScenarioFile fails if a file is ever left out.
//
//go:embed *.yaml */*.yaml */*.json
var shipped embed.FS

// LocalDir is the folder of scenarios a name is looked up in before the shipped ones: the current
// folder's scenarios/.
const LocalDir = "scenarios"

// ShippedScenario is one shipped scenario, as `lockcheck scenarios` lists it.
type ShippedScenario struct {
	Name        string   `json:"name"` // its path under scenarios/ without .yaml: k2-x, debate/k2-set-nx-px
	Claims      []string `json:"claims"`
	Lock        string   `json:"lock"`
	Summary     string   `json:"summary"` // the file's opening comment, in one line
	Description string   `json:"description"`
	Supports    string   `json:"supports,omitempty"`
}

// Shipped lists the shipped scenarios, top-level ones first, then by folder and name. A file that
// does not load is listed with its error as its description (TestEveryShippedScenarioLoads keeps
// that from shipping).
func Shipped() []ShippedScenario {
	var out []ShippedScenario
	for _, f := range shippedFiles() {
		src, _ := shipped.ReadFile(f)
		s := ShippedScenario{Name: strings.TrimSuffix(f, ".yaml"), Summary: openingComment(src)}
		if sc, err := Parse(f, src); err != nil {
			s.Description = "does not load: " + err.Error()
		} else {
			s.Claims, s.Lock, s.Description, s.Supports = sc.Claims, sc.Lock, strings.TrimSpace(sc.Description), sc.Supports
		}
		out = append(out, s)
	}
	return out
}

// openingComment is the comment a scenario file starts with (every shipped one says in it what
// the scenario shows), as one line.
func openingComment(src []byte) string {
	var words []string
	for _, line := range strings.Split(string(src), "\n") {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			break
		}
		words = append(words, strings.Fields(text)...)
	}
	return strings.Join(words, " ")
}

// shippedFiles are the embedded scenario files (slash-separated), top-level first.
func shippedFiles() []string {
	var files []string
	_ = fs.WalkDir(shipped, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	sort.Slice(files, func(i, j int) bool {
		di, dj := strings.Count(files[i], "/"), strings.Count(files[j], "/")
		if di != dj {
			return di < dj
		}
		return files[i] < files[j]
	})
	return files
}

// ShippedSource returns a shipped file's text by its path under scenarios/ (debate/k2-set-nx-px.yaml).
func ShippedSource(name string) ([]byte, error) { return shipped.ReadFile(name) }

// Resolve turns what a user typed after `lockcheck run` into a scenario file's path: the file
// itself when it exists; otherwise a name — NAME, NAME.yaml, sub/NAME, or scenarios/sub/NAME.yaml —
// looked up in the current folder's scenarios/ and then among the shipped scenarios. A bare name
// is also found in a subfolder when only one file has it. An argument starting with /, ./ or ../
// is only ever a path. The error for a name found nowhere lists the nearest shipped names.
func Resolve(arg string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	}
	if filepath.IsAbs(arg) || strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") {
		return "", fmt.Errorf("scenario %s: no such file%s", arg, nearestHint(arg))
	}
	name := strings.TrimPrefix(filepath.ToSlash(arg), LocalDir+"/")
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")
	if name == "" || strings.Contains(name, "..") {
		return "", fmt.Errorf("scenario %q: not a file nor a scenario's name%s", arg, nearestHint(arg))
	}

	// The current folder's scenarios/.
	if p, err := findIn(os.DirFS(LocalDir), name); err != nil {
		return "", fmt.Errorf("scenario %q in %s/: %w", arg, LocalDir, err)
	} else if p != "" {
		return filepath.Join(LocalDir, filepath.FromSlash(p)), nil
	}
	// The shipped ones, from their copy in the cache.
	p, err := findIn(shipped, name)
	if err != nil {
		return "", fmt.Errorf("scenario %q: %w", arg, err)
	}
	if p == "" {
		return "", fmt.Errorf("no scenario %q: not a file, not in ./%s/, not shipped with lockcheck%s", arg, LocalDir, nearestHint(name))
	}
	dir, err := ShippedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(p)), nil
}

// findIn finds name (slash-separated, no extension) in fsys: name.yaml (or .yml) itself, else a
// bare name one folder down. "" when there is none; an error when a bare name is in two folders.
func findIn(fsys fs.FS, name string) (string, error) {
	for _, ext := range []string{".yaml", ".yml"} {
		if st, err := fs.Stat(fsys, name+ext); err == nil && !st.IsDir() {
			return name + ext, nil
		}
	}
	if strings.Contains(name, "/") {
		return "", nil
	}
	var found []string
	for _, ext := range []string{".yaml", ".yml"} {
		m, _ := fs.Glob(fsys, "*/"+name+ext)
		found = append(found, m...)
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("the name is in %d folders (%s): give it with its folder, e.g. %s",
		len(found), strings.Join(found, ", "), strings.TrimSuffix(found[0], path.Ext(found[0])))
}

// nearestHint is "; nearest: a, b, c (lockcheck scenarios lists them all)" for the shipped names
// closest to what was typed.
func nearestHint(typed string) string {
	typed = strings.TrimSuffix(strings.TrimSuffix(path.Base(filepath.ToSlash(typed)), ".yaml"), ".yml")
	var names []string
	for _, f := range shippedFiles() {
		names = append(names, strings.TrimSuffix(f, ".yaml"))
	}
	near := Nearest(typed, names, 3)
	if len(near) == 0 {
		return "; lockcheck scenarios lists the shipped ones"
	}
	return fmt.Sprintf("; nearest shipped scenarios: %s (lockcheck scenarios lists them all)", strings.Join(near, ", "))
}

// Nearest returns up to n of names closest to typed by edit distance (a name's folder is ignored
// in the comparison), closest first; names too far to be a slip of the keyboard are left out.
func Nearest(typed string, names []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	var all []scored
	for _, name := range names {
		base := path.Base(name)
		d := editDistance(typed, base)
		if strings.Contains(base, typed) || strings.Contains(typed, base) {
			d = min(d, abs(len(base)-len(typed)))
		}
		if d <= max(3, len(typed)/2) {
			all = append(all, scored{name, d})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return a.d - b.d })
	var out []string
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.name)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the Levenshtein distance between a and b (bytes: scenario names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ShippedDir writes the shipped scenarios into <cache>/lockcheck/scenarios/<hash> once per
// version and returns that folder. A folder is complete when it exists: it is written under a
// temporary name and renamed into place (two lockcheck processes may start at once; one wins).
func ShippedDir() (string, error) {
	files := append(shippedFiles(), shippedOthers()...)
	h := sha256.New()
	for _, f := range files {
		b, _ := shipped.ReadFile(f)
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "lockcheck", "scenarios")
	dir := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("shipped scenarios: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return "", fmt.Errorf("shipped scenarios: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only if something failed
	for _, f := range files {
		b, _ := shipped.ReadFile(f)
		p := filepath.Join(tmp, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("shipped scenarios: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", fmt.Errorf("shipped scenarios: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return dir, nil // another process was first
		}
		return "", fmt.Errorf("shipped scenarios: %w", err)
	}
	return dir, nil
}

// shippedOthers are the embedded files that are not scenarios (repeatability figures).
func shippedOthers() []string {
	var out []string
	_ = fs.WalkDir(shipped, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".yaml") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// ShippedFolder is folder when it exists on disk, else the same folder of the shipped copy: how
// a command whose default is a folder of this repository (scenarios/debate) works anywhere.
// Only a folder under scenarios/ has a shipped copy; any other is returned as it is.
func ShippedFolder(folder string) (string, error) {
	if _, err := os.Stat(folder); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return folder, nil
	}
	rel, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(folder)), LocalDir+"/")
	if !ok {
		return folder, nil
	}
	if _, err := fs.Stat(shipped, rel); err != nil {
		return folder, nil
	}
	dir, err := ShippedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}
