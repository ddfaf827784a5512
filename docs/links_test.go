package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's top folder, seen from this package's folder.
const repoRoot = ".."

// documents lists the Markdown files whose links are checked: the top-level documents and
// every document in docs/.
func documents(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.md", "docs/*.md"} {
		matches, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	for _, must := range []string{"README.md", "DESIGN.md", "docs/TOUR.md", "docs/PAPER.md", "docs/RESULTS.md"} {
		if !slices.Contains(files, filepath.Join(repoRoot, must)) {
			t.Errorf("%s is missing", must)
		}
	}
	return files
}

// TestLinks checks every relative link of every document: its file or folder exists inside
// the repository, and its #fragment, if any, names a heading of the Markdown file it points to.
func TestLinks(t *testing.T) {
	for _, doc := range documents(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range checkLinks(doc, string(text)) {
			t.Error(problem)
		}
	}
}

// TestCodeNames checks that every code name a link of the README, TOUR.md or PAPER.md shows
// ([`rl.GRPOAdvantage`](../rl/group.go)) is declared in the Go file the link points to, and
// that the tour has its stops and the README links the functions a new reader comes for.
func TestCodeNames(t *testing.T) {
	for _, name := range []string{"README.md", "docs/TOUR.md", "docs/PAPER.md"} {
		doc := filepath.Join(repoRoot, name)
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Error(err)
			continue
		}
		checked := 0
		var linked []string
		for _, l := range markdownLinks(string(text)) {
			code, ok := codeName(l.text)
			if !ok || !strings.HasSuffix(stripFragment(l.target), ".go") {
				continue
			}
			checked++
			linked = append(linked, code)
			if err := declares(resolve(doc, l.target), code); err != nil {
				t.Errorf("%s line %d: [%s](%s): %v", name, l.line, l.text, l.target, err)
			}
		}
		if name == "docs/TOUR.md" && checked < 10 {
			t.Errorf("TOUR.md links %d code names to Go files; a tour of one GRPO step needs at least 10 stops", checked)
		}
		// The README's front door: the action mask, the group advantage and the policy loss,
		// each one link away.
		if name == "README.md" {
			for _, want := range []string{"mdp.Flatten", "rl.GRPOAdvantage", "rl.PPOClipLoss"} {
				if !slices.Contains(linked, want) {
					t.Errorf("README.md does not link [`%s`](...go): a new reader should reach it from the README", want)
				}
			}
		}
	}
}

// TestCheckersFail checks that the checkers catch what they are for: a broken link, a link out
// of the repository, a missing heading, and a code name its file does not declare.
func TestCheckersFail(t *testing.T) {
	doc := filepath.Join(repoRoot, "docs", "TOUR.md")
	for _, c := range []struct {
		name, markdown string
		problems       int
	}{
		{"good file link", "[design](../DESIGN.md)", 0},
		{"good folder link", "[rl](../rl)", 0},
		{"good heading", "[seams](../DESIGN.md#seams)", 0},
		{"web link ignored", "[paper](https://arxiv.org/abs/2511.14460)", 0},
		{"link in a code span ignored", "`[x](nowhere.md)`", 0},
		{"link in a code block ignored", "```\n[x](nowhere.md)\n```", 0},
		{"missing file", "[x](../nowhere.md)", 1},
		{"outside the repository", "[x](../../elsewhere/NOTES.md)", 1},
		{"missing heading", "[x](../DESIGN.md#no-such-heading)", 1},
		{"two broken links on a line", "[a](a.md) and [b](b.md)", 2},
	} {
		if got := checkLinks(doc, c.markdown); len(got) != c.problems {
			t.Errorf("%s: checkLinks(%q) found %d problems %q, want %d", c.name, c.markdown, len(got), got, c.problems)
		}
	}

	group := filepath.Join(repoRoot, "rl", "group.go")
	for _, c := range []struct {
		file, name string
		ok         bool
	}{
		{group, "rl.GRPOAdvantage", true},
		{group, "GRPOAdvantage", true},
		{group, "rl.NoSuchFunction", false},
		{group, "otherpkg.GRPOAdvantage", false},
		{filepath.Join(repoRoot, "rl"), "rl.GAE", true},
		{filepath.Join(repoRoot, "rl"), "rl.Matrix.Row", true},
		{filepath.Join(repoRoot, "rl"), "Matrix.NoSuchMethod", false},
		{filepath.Join(repoRoot, "rl"), "Matrix.Data", true},
	} {
		err := declares(c.file, c.name)
		if (err == nil) != c.ok {
			t.Errorf("declares(%s, %s) = %v, want ok=%v", c.file, c.name, err, c.ok)
		}
	}
}

// link is one Markdown link: its text, its target and the line it is on.
type link struct {
	text, target string
	line         int
}

// linkPattern matches an inline link [text](target) or [text](target "title").
var linkPattern = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// markdownLinks returns the inline links of a Markdown text, leaving out those in fenced code
// blocks and in code spans, where brackets are code, not links.
func markdownLinks(text string) []link {
	var links []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatchIndex(line, -1) {
			if inCodeSpan(line, m[0]) {
				continue
			}
			links = append(links, link{text: line[m[2]:m[3]], target: line[m[4]:m[5]], line: i + 1})
		}
	}
	return links
}

// inCodeSpan reports whether position pos of a line lies inside a `code span`: an odd number
// of backticks before it.
func inCodeSpan(line string, pos int) bool {
	return strings.Count(line[:pos], "`")%2 == 1
}

// checkLinks returns one message for each broken relative link of the Markdown text of file
// doc.
func checkLinks(doc, text string) []string {
	var problems []string
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return []string{err.Error()}
	}
	for _, l := range markdownLinks(text) {
		if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
			continue
		}
		where := fmt.Sprintf("%s line %d: [%s](%s)", filepath.Base(doc), l.line, l.text, l.target)
		path := doc
		if p := stripFragment(l.target); p != "" {
			path = resolve(doc, l.target)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
			problems = append(problems, where+": points outside the repository")
			continue
		}
		if _, err := os.Stat(path); err != nil {
			problems = append(problems, where+": no such file or folder")
			continue
		}
		if i := strings.Index(l.target, "#"); i >= 0 && strings.HasSuffix(path, ".md") {
			if err := hasHeading(path, l.target[i+1:]); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			}
		}
	}
	return problems
}

// stripFragment returns a link target without its #fragment.
func stripFragment(target string) string {
	if i := strings.Index(target, "#"); i >= 0 {
		return target[:i]
	}
	return target
}

// resolve returns the path a relative link target of file doc points to.
func resolve(doc, target string) string {
	return filepath.Join(filepath.Dir(doc), filepath.FromSlash(stripFragment(target)))
}

// hasHeading reports an error unless the Markdown file has a heading whose anchor is fragment.
func hasHeading(path, fragment string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		anchor := headingAnchor(strings.TrimLeft(line, "#"))
		if n := seen[anchor]; n > 0 {
			seen[anchor] = n + 1
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		if anchor == fragment {
			return nil
		}
	}
	return fmt.Errorf("no heading with anchor #%s in %s", fragment, filepath.Base(path))
}

// headingAnchor is the anchor GitHub gives a heading: lower case, letters, digits, hyphens and
// underscores kept, spaces made hyphens, everything else dropped.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(unicode.ToLower(r))
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// codeNamePattern matches a Go name, possibly qualified: Func, pkg.Func, Type.Method,
// pkg.Type.Method.
var codeNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$`)

// codeName returns the Go name a link's text names, if it is one written as code (`name`).
func codeName(text string) (string, bool) {
	if len(text) < 3 || text[0] != '`' || text[len(text)-1] != '`' {
		return "", false
	}
	name := strings.TrimSuffix(text[1:len(text)-1], "()")
	return name, codeNamePattern.MatchString(name)
}

// declares reports an error unless the Go file (or the package folder) at path declares name:
// a top-level function, type, variable or constant (Name or pkg.Name), or a method or struct
// field (Type.Name or pkg.Type.Name). A qualifying package must be the file's package.
func declares(path, name string) error {
	files, err := parseGo(path)
	if err != nil {
		return err
	}
	parts := strings.Split(name, ".")
	pkg := files[0].Name.Name
	if len(parts) == 3 || (len(parts) == 2 && parts[0] == pkg) {
		if parts[0] != pkg {
			return fmt.Errorf("%s is in package %s, not %s", filepath.Base(path), pkg, parts[0])
		}
		parts = parts[1:]
	} else if len(parts) == 2 && !unicode.IsUpper(rune(parts[0][0])) {
		return fmt.Errorf("%s is in package %s, not %s", filepath.Base(path), pkg, parts[0])
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			if declaresIn(decl, parts) {
				return nil
			}
		}
	}
	return fmt.Errorf("%s does not declare %s", filepath.Base(path), strings.Join(parts, "."))
}

// parseGo parses the Go file at path, or every non-test Go file of the folder at path.
func parseGo(path string) ([]*ast.File, error) {
	paths := []string{path}
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if info.IsDir() {
		paths, err = filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return nil, err
		}
		paths = slices.DeleteFunc(paths, func(p string) bool { return strings.HasSuffix(p, "_test.go") })
		if len(paths) == 0 {
			return nil, fmt.Errorf("no Go files in %s", path)
		}
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// declaresIn reports whether decl declares the name parts: [Name] at top level, or
// [Type, Name] as a method of Type or a field of struct Type.
func declaresIn(decl ast.Decl, parts []string) bool {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			return len(parts) == 1 && d.Name.Name == parts[0]
		}
		return len(parts) == 2 && d.Name.Name == parts[1] && receiverType(d.Recv.List[0].Type) == parts[0]
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if len(parts) == 1 && s.Name.Name == parts[0] {
					return true
				}
				if len(parts) == 2 && s.Name.Name == parts[0] && hasField(s.Type, parts[1]) {
					return true
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if len(parts) == 1 && n.Name == parts[0] {
						return true
					}
				}
			}
		}
	}
	return false
}

// receiverType is the name of a method receiver's type: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// hasField reports whether a struct type has a field of the given name.
func hasField(e ast.Expr, name string) bool {
	st, ok := e.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}
