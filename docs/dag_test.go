package docs

import (
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dagHeading starts DESIGN.md's section on the package graph.
const dagHeading = "## Package DAG"

// TestDAG checks DESIGN.md's package graph against the code: every package of the module is
// listed once and nothing else is, each package's arrows are exactly the module's packages and
// the non-standard-library packages its non-test Go files import, each arrow points at a
// package listed above (the list goes bottom to top), a package marked (stdlib only) has no
// arrow, and the sentence under the graph names exactly the packages that import nothing of
// ours. Imports of _test.go files are not part of the graph.
func TestDAG(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(repoRoot, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	module, pkgs, err := modulePackages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under %s; the module has more", len(pkgs), repoRoot)
	}
	for _, problem := range checkDAG(string(text), module, pkgs) {
		t.Error(problem)
	}
}

// TestDAGCheckerFails checks that checkDAG catches each way the graph can go stale: a package
// missing, a package that does not exist, an arrow missing, an arrow too many, an external
// import missing, a package listed twice, an arrow beside (stdlib only), a wrong list of
// packages that import nothing of ours, and an arrow pointing down the list.
func TestDAGCheckerFails(t *testing.T) {
	pkgs := map[string][]string{
		"a":     nil,
		"b":     {"m/a", "fmt"},
		"c/d":   {"m/a", "m/b", "golang.org/x/sys/unix", "github.com/x/lib/v2"},
		"cmd/e": {"m/c/d", "os"},
	}
	good := "# m\n\n## Package DAG (bottom to top)\n\n```\n" +
		"a        the bottom (stdlib only)\n" +
		"b        the middle -> a\n" +
		"c/d      the top, over two\n" +
		"         lines     -> b, a,\n" +
		"                      x/sys/unix (mmap), x/lib\n" +
		"cmd/e    the command -> c/d\n" +
		"```\n\nNo package reaches up. `a` imports nothing of ours.\n\n## Next\n"
	if got := checkDAG(good, "m", pkgs); len(got) != 0 {
		t.Fatalf("checkDAG of a true graph found %q", got)
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"package missing", "cmd/e    the command -> c/d\n", "", "package cmd/e is missing"},
		{"no such package", "a        the bottom", "a/x      the bottom", "a/x is not a package"},
		{"arrow missing", "-> b, a,", "-> b,", "c/d imports a, but the graph has no arrow c/d -> a"},
		{"arrow too many", "the middle -> a", "the middle -> a, cmd/e", "b -> cmd/e, but b does not import cmd/e"},
		{"external import missing", "x/sys/unix (mmap), x/lib", "x/lib", "c/d imports golang.org/x/sys/unix, but the graph has no arrow"},
		{"listed twice", "cmd/e    the command", "a        again\ncmd/e    the command", "a is listed twice"},
		{"stdlib only", "the middle -> a", "the middle (stdlib only) -> a", "b is marked (stdlib only) but has an arrow"},
		{"nothing of ours", "`a` imports", "`a` and `b` import", "b imports packages of ours"},
	} {
		if !strings.Contains(good, c.old) {
			t.Fatalf("%s: the graph has no %q", c.name, c.old)
		}
		design := strings.Replace(good, c.old, c.new, 1)
		got := checkDAG(design, "m", pkgs)
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: checkDAG found %q, want a problem containing %q", c.name, got, c.want)
		}
	}
	// An arrow to a package listed below is reported as such.
	down := strings.Replace(good, "a        the bottom (stdlib only)\n", "", 1)
	down = strings.Replace(down, "cmd/e    the command -> c/d\n", "cmd/e    the command -> c/d\na        the bottom\n", 1)
	got := checkDAG(down, "m", pkgs)
	if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, "b -> a points down the list") }) {
		t.Errorf("arrow down the list: checkDAG found %q", got)
	}
}

// dagEntry is one package of DESIGN.md's graph: its name, the line it starts on, and the
// names its arrow points at, with the line of each.
type dagEntry struct {
	name       string
	line       int
	arrows     []dagArrow
	stdlibOnly int // the line that says "(stdlib only)", if one does
}

// dagArrow is one name an arrow points at, as written (a remark in parentheses dropped).
type dagArrow struct {
	to   string
	line int
}

// parseDAG reads the code block of DESIGN.md's graph section. A line that starts at column 0
// names a package (its first word); the lines indented under it continue its entry. "->"
// starts the entry's arrow list, a comma-separated list that goes on to the next line while a
// line ends with a comma. It returns the entries, the lines of the text after the block up to
// the next section (first is the number of the first of them) and any problems of form.
func parseDAG(design string) (entries []dagEntry, after []string, first int, problems []string) {
	lines := strings.Split(design, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, dagHeading) })
	if start < 0 {
		return nil, nil, 0, []string{fmt.Sprintf("DESIGN.md has no section %q", dagHeading)}
	}
	open := -1
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		if strings.HasPrefix(lines[i], "```") {
			open = i
			break
		}
	}
	if open < 0 {
		return nil, nil, 0, []string{fmt.Sprintf("DESIGN.md line %d: the section has no code block", start+1)}
	}
	end := -1
	for i := open + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, nil, 0, []string{fmt.Sprintf("DESIGN.md line %d: the code block is not closed", open+1)}
	}
	continuing := false // the previous line's arrow list ended with a comma
	hasArrow := false
	for i := open + 1; i < end; i++ {
		line, n := lines[i], i+1
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			if continuing {
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: the arrow list of %s ends with a comma", n-1, entries[len(entries)-1].name))
			}
			entries = append(entries, dagEntry{name: strings.Fields(line)[0], line: n})
			continuing, hasArrow = false, false
		} else if len(entries) == 0 {
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: an indented line before the first package", n))
			continue
		}
		e := &entries[len(entries)-1]
		if strings.Contains(line, "(stdlib only)") {
			e.stdlibOnly = n
		}
		list := ""
		if j := strings.Index(line, "->"); j >= 0 {
			if hasArrow || continuing {
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s has a second arrow", n, e.name))
			}
			hasArrow = true
			list = line[j+2:]
		} else if continuing {
			list = line
		} else {
			continue
		}
		list = strings.TrimSpace(list)
		continuing = strings.HasSuffix(list, ",")
		for _, item := range strings.Split(strings.TrimSuffix(list, ","), ",") {
			if k := strings.Index(item, "("); k >= 0 {
				item = item[:k] // a remark: x/sys/unix (mmap)
			}
			if item = strings.TrimSpace(item); item == "" {
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: an empty name in the arrow list of %s", n, e.name))
				continue
			}
			e.arrows = append(e.arrows, dagArrow{to: item, line: n})
		}
	}
	after = lines[end+1:]
	for i, l := range after {
		if strings.HasPrefix(l, "## ") {
			after = after[:i]
			break
		}
	}
	return entries, after, end + 2, problems
}

// checkDAG returns one message for each difference between the graph of the design text and
// pkgs, the module's packages (by folder, relative to the module's root, as the graph names
// them) with the import paths of their non-test files; module is the module's path.
func checkDAG(design, module string, pkgs map[string][]string) []string {
	entries, after, first, problems := parseDAG(design)
	if entries == nil {
		return problems
	}
	listed := map[string]int{} // package -> its line
	for _, e := range entries {
		if l, dup := listed[e.name]; dup {
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s is listed twice (also line %d)", e.line, e.name, l))
			continue
		}
		listed[e.name] = e.line
	}
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		if _, ok := listed[name]; !ok {
			problems = append(problems, fmt.Sprintf("DESIGN.md lines %d-%d: package %s is missing from the graph (it imports %s)",
				entries[0].line, entries[len(entries)-1].line, name, describeImports(ours(module, pkgs[name]))))
		}
	}
	for _, e := range entries {
		imports, ok := pkgs[e.name]
		if !ok {
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s is not a package of the module", e.line, e.name))
			continue
		}
		if e.stdlibOnly > 0 && len(e.arrows) > 0 {
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s is marked (stdlib only) but has an arrow", e.stdlibOnly, e.name))
		}
		internal := ours(module, imports)
		external := slices.DeleteFunc(slices.Clone(imports), func(p string) bool { return !isExternal(module, p) })
		drawn := map[string]bool{}
		for _, a := range e.arrows {
			target := a.to
			if _, isPkg := pkgs[a.to]; !isPkg {
				if p := slices.IndexFunc(external, func(path string) bool { return namesExternal(a.to, path) }); p >= 0 {
					target = external[p]
				}
			}
			if drawn[target] {
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s -> %s is drawn twice", a.line, e.name, a.to))
				continue
			}
			drawn[target] = true
			switch {
			case slices.Contains(external, target):
			case !slices.Contains(internal, target):
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: the graph has the arrow %s -> %s, but %s does not import %s", a.line, e.name, a.to, e.name, a.to))
			case listed[target] >= e.line:
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s -> %s points down the list: %s must be listed above %s (line %d), the graph goes bottom to top",
					a.line, e.name, a.to, a.to, e.name, listed[target]))
			}
		}
		for _, p := range append(internal, external...) {
			if !drawn[p] {
				problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s imports %s, but the graph has no arrow %s -> %s", e.line, e.name, p, e.name, p))
			}
		}
	}
	return append(problems, checkNothingOfOurs(after, first, module, pkgs)...)
}

// checkNothingOfOurs checks the sentence under the graph that names, in `code`, the packages
// that "import nothing of ours": they must be exactly the packages without an import of the
// module. The lines are the text under the graph, the first of them line first.
func checkNothingOfOurs(lines []string, first int, module string, pkgs map[string][]string) []string {
	const phrase = "nothing of ours"
	text := strings.Join(lines, "\n")
	at := strings.Index(text, phrase)
	if at < 0 {
		return []string{fmt.Sprintf("DESIGN.md line %d: no sentence under the graph names the packages that import %s", first, phrase)}
	}
	sentence := max(strings.LastIndex(text[:at], ". "), strings.LastIndex(text[:at], ".\n")) + 1
	line := first + strings.Count(text[:at], "\n")
	var named []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text[sentence:at], -1) {
		named = append(named, m[1])
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(pkgs)) {
		none := len(ours(module, pkgs[name])) == 0
		switch {
		case none && !slices.Contains(named, name):
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: %s imports nothing of ours, but the sentence does not name it", line, name))
		case !none && slices.Contains(named, name):
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: the sentence says %s imports nothing of ours, but %s imports packages of ours (%s)",
				line, name, name, describeImports(ours(module, pkgs[name]))))
		}
	}
	for _, name := range named {
		if _, ok := pkgs[name]; !ok {
			problems = append(problems, fmt.Sprintf("DESIGN.md line %d: the sentence names %s, which is not a package of the module", line, name))
		}
	}
	return problems
}

// ours returns the imports of the module's own packages among imports, by their names in the
// graph (the path below the module's).
func ours(module string, imports []string) []string {
	var names []string
	for _, p := range imports {
		if name, ok := strings.CutPrefix(p, module+"/"); ok {
			names = append(names, name)
		}
	}
	return names
}

// isExternal reports whether the import path is another module's: not the module's own, and
// its first element has a dot (as every path outside the standard library has).
func isExternal(module, path string) bool {
	if path == module || strings.HasPrefix(path, module+"/") {
		return false
	}
	elem, _, _ := strings.Cut(path, "/")
	return strings.Contains(elem, ".")
}

// majorSuffix matches a major-version suffix of a module path: /v2.
var majorSuffix = regexp.MustCompile(`/v[0-9]+$`)

// namesExternal reports whether a name in the graph names the external import path: the name
// is the path, or its last elements, the major version dropped (x/sys/unix for
// golang.org/x/sys/unix, klauspost/cpuid for github.com/klauspost/cpuid/v2).
func namesExternal(name, path string) bool {
	for _, p := range []string{path, majorSuffix.ReplaceAllString(path, "")} {
		if p == name || strings.HasSuffix(p, "/"+name) {
			return true
		}
	}
	return false
}

// describeImports lists names for a message, or says there are none.
func describeImports(names []string) string {
	if len(names) == 0 {
		return "nothing of ours"
	}
	return strings.Join(names, ", ")
}

// modulePackages returns the path of the module at root and its packages: every folder with a
// Go file, named by its path below root, with the import paths of its non-test Go files,
// sorted. Files for every system and build tag count alike (the graph is the same on every
// machine), except those marked //go:build ignore. What the go command leaves out is left out
// (walkGoFiles). Only the imports are parsed, so this takes milliseconds.
func modulePackages(root string) (string, map[string][]string, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", nil, err
	}
	module := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			module = strings.Trim(strings.TrimSpace(rest), `"`)
			break
		}
	}
	if module == "" {
		return "", nil, fmt.Errorf("go.mod names no module")
	}
	pkgs := map[string][]string{}
	fset := token.NewFileSet()
	err = walkGoFiles(root, func(path string) error {
		name := filepath.Base(path)
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir = filepath.ToSlash(dir)
		if _, ok := pkgs[dir]; !ok {
			pkgs[dir] = []string{}
		}
		if strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			if g.Pos() > f.Package {
				break
			}
			for _, c := range g.List {
				if expr, err := constraint.Parse(c.Text); err == nil && constraint.IsGoBuild(c.Text) && expr.String() == "ignore" {
					return nil
				}
			}
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
			if !slices.Contains(pkgs[dir], p) {
				pkgs[dir] = append(pkgs[dir], p)
			}
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	for _, imports := range pkgs {
		slices.Sort(imports)
	}
	return module, pkgs, nil
}

// walkGoFiles calls fn with the path of every Go file of the module at root, tests included,
// in lexical order, leaving out what the go command leaves out: folders named testdata or
// vendor or starting with . or _, nested modules, and files starting with . or _.
func walkGoFiles(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		return fn(path)
	})
}
