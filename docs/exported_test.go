package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedDocumented checks the rule that every exported identifier is documented: each
// exported top-level func, method on an exported type, type, var and const of every non-test
// Go file of the module has a doc comment, and so does each exported field of an exported
// struct, down through structs written inline as field types. Test files, testdata folders,
// nested modules and generated files are not checked.
func TestExportedDocumented(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := walkGoFiles(repoRoot, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		for _, problem := range undocumented(fset, f) {
			t.Errorf("%s:%s", filepath.ToSlash(rel), problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked %d Go files under %s; the module has more", files, repoRoot)
	}
}

// TestExportedCheckerFails checks that undocumented catches an undocumented exported field,
// one inside an inline struct, a type, a func, a method, a const and a var, and lets pass what the
// rule allows: a group's line comment, an embedded field, a const in a commented group, a
// var with a line comment in a group, and unexported names.
func TestExportedCheckerFails(t *testing.T) {
	const src = `package p

// Logits is documented.
type Logits struct {
	B, L, V int // batch, response length, vocabulary
	Data []float32
	// Shape is documented.
	Shape struct {
		Rows int // documented
		Cols int
	}
	Items []struct{ Name string }
	Logits2
	hidden int
}

type Logits2 struct{}

// Kinds of things.
const (
	KindA = iota
	KindB
)

const Loose = 1

var (
	Noted = 2 // a line comment in an uncommented group
	Bare  = 3
)

func Exported() {}

// Method is documented.
func (Logits) Method() {}

func (Logits) Bare() {}

func (hiddenType) Free() {}

type hiddenType struct{ Field int }

func unexported() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(undocumented(fset, f), "\n")
	want := strings.Join([]string{
		"6 Logits.Data",
		"10 Logits.Shape.Cols",
		"12 Logits.Items",
		"12 Logits.Items.Name",
		"17 type Logits2",
		"25 const Loose",
		"29 var Bare",
		"32 func Exported",
		"37 func Logits.Bare",
	}, "\n")
	if got != want {
		t.Errorf("undocumented reported\n%s\nwant\n%s", got, want)
	}
}

// undocumented lists, as "line Name", each exported identifier of f that the documentation
// rule wants a comment on and that has none.
func undocumented(fset *token.FileSet, f *ast.File) []string {
	var problems []string
	report := func(pos token.Pos, what string) {
		problems = append(problems, fmt.Sprintf("%d %s", fset.Position(pos).Line, what))
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				recv := receiverType(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			if d.Doc == nil {
				report(d.Name.Pos(), "func "+name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Doc == nil && d.Doc == nil {
						report(s.Name.Pos(), "type "+s.Name.Name)
					}
					fields(s.Type, s.Name.Name, report)
				case *ast.ValueSpec:
					documented := s.Doc != nil || d.Doc != nil || d.Lparen.IsValid() && s.Comment != nil
					for _, n := range s.Names {
						if n.IsExported() && !documented {
							report(n.Pos(), d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	return problems
}

// fields reports each exported field without a doc or line comment of the struct types that
// expr is or holds inline (through pointers, slices, arrays, maps and channels), naming it
// owner.Field. Embedded fields are exempt.
func fields(expr ast.Expr, owner string, report func(token.Pos, string)) {
	switch e := expr.(type) {
	case *ast.StructType:
		for _, field := range e.Fields.List {
			for _, n := range field.Names {
				if !n.IsExported() {
					continue
				}
				if field.Doc == nil && field.Comment == nil {
					report(n.Pos(), owner+"."+n.Name)
				}
				fields(field.Type, owner+"."+n.Name, report)
			}
		}
	case *ast.StarExpr:
		fields(e.X, owner, report)
	case *ast.ArrayType:
		fields(e.Elt, owner, report)
	case *ast.MapType:
		fields(e.Key, owner, report)
		fields(e.Value, owner, report)
	case *ast.ChanType:
		fields(e.Value, owner, report)
	case *ast.ParenExpr:
		fields(e.X, owner, report)
	}
}
