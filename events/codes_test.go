package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// The codes listed here, the constants of internal/errcode and the table
// in subjects.md must be the same set: a code added in one place only
// fails this test.
func TestCodesMatchErrcodeAndSubjects(t *testing.T) {
	fromErrcode := stringConstants(t, "../internal/errcode/errcode.go")
	doc, err := os.ReadFile("../subjects.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)## Error codes\n(.*?)(\n## |\z)`).FindSubmatch(doc)
	if section == nil {
		t.Fatal("subjects.md has no Error codes section")
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(section[1], -1) {
		documented = append(documented, string(m[1]))
	}
	codes := Codes()
	for _, list := range []struct {
		name string
		got  []string
	}{{"internal/errcode", fromErrcode}, {"subjects.md", documented}} {
		a, b := slices.Sorted(slices.Values(codes)), slices.Sorted(slices.Values(list.got))
		if !slices.Equal(a, b) {
			t.Errorf("events.Codes() = %v\n%s has %v", a, list.name, b)
		}
	}
}

// stringConstants returns the values of the string constants of a file.
func stringConstants(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
	}
	return out
}
