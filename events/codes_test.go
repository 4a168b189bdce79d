package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The codes listed here, the constants of errcode and the table
// in subjects.md must be the same set: a code added in one place only
// fails this test.
func TestCodesMatchErrcodeAndSubjects(t *testing.T) {
	fromErrcode := stringConstants(t, "../errcode/errcode.go")
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
	}{{"errcode", fromErrcode}, {"subjects.md", documented}} {
		a, b := slices.Sorted(slices.Values(codes)), slices.Sorted(slices.Values(list.got))
		if !slices.Equal(a, b) {
			t.Errorf("events.Codes() = %v\n%s has %v", a, list.name, b)
		}
	}
}

// stringConstants returns the values of the string constants of a file.
func stringConstants(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, c := range namedConstants(t, path) {
		out = append(out, c[1])
	}
	return out
}

// namedConstants returns the name and value of each string constant of a
// file.
func namedConstants(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, [2]string{vs.Names[i].Name, s})
				}
			}
		}
	}
	return out
}

// Each list of values (triggers, roles, statuses, skip reasons) must be the
// same in this package, in subjects.md and
// in the enum tags the schemas are made from: a value added in one place
// only fails this test.
func TestValueListsMatchSubjectsAndSchemas(t *testing.T) {
	doc, err := os.ReadFile("../subjects.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := func(pattern string) []string {
		m := regexp.MustCompile(pattern).FindSubmatch(doc)
		if m == nil {
			t.Fatalf("subjects.md has no match for %s", pattern)
		}
		var out []string
		for _, v := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllSubmatch(m[1], -1) {
			out = append(out, string(v[1]))
		}
		return out
	}
	enum := func(v any, field string) []string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		if !ok {
			t.Fatalf("%T has no field %s", v, field)
		}
		return strings.Split(f.Tag.Get("enum"), "|")
	}
	for _, list := range []struct {
		name    string
		ours    []string
		sources map[string][]string
	}{
		{"triggers", Triggers(), map[string][]string{
			"subjects.md":        documented("(?m)^\\| `trigger` \\| (.*) \\|"),
			"Request.Trigger":    enum(Request{}, "Trigger"),
			"Checkpoint.Trigger": enum(Checkpoint{}, "Trigger"),
		}},
		{"roles", Roles(), map[string][]string{
			"subjects.md":     documented("`role` \\(([^)]*)\\)"),
			"InputEvent.Role": enum(InputEvent{}, "Role"),
		}},
		{"statuses", Statuses(), map[string][]string{
			"subjects.md":      documented("\\*\\*activated\\*\\*: `status` \\(([^)]*)\\)"),
			"Activated.Status": enum(Activated{}, "Status"),
		}},
		{"skip reasons", SkipReasons(), map[string][]string{
			"subjects.md":    documented("(?s)\\*\\*skipped\\*\\*: `reason` \\(([^)]*)\\)"),
			"Skipped.Reason": enum(Skipped{}, "Reason"),
		}},
	} {
		want := slices.Sorted(slices.Values(list.ours))
		for source, got := range list.sources {
			if got := slices.Sorted(slices.Values(got)); !slices.Equal(want, got) {
				t.Errorf("%s: events has %v\n%s has %v", list.name, want, source, got)
			}
		}
	}
}

// A constant declared in codes.go but left out of its list function fails
// here: each list has as many distinct values as codes.go has constants of
// its prefix.
func TestListsHoldEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]int{}
	for _, decl := range f.Decls {
		if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.CONST {
			for _, spec := range gen.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					for _, prefix := range []string{"Code", "Trigger", "Role", "Status", "Skip"} {
						if strings.HasPrefix(name.Name, prefix) {
							declared[prefix]++
						}
					}
				}
			}
		}
	}
	for prefix, list := range map[string][]string{"Code": Codes(), "Trigger": Triggers(), "Role": Roles(), "Status": Statuses(), "Skip": SkipReasons()} {
		if distinct := len(slices.Compact(slices.Sorted(slices.Values(list)))); distinct != declared[prefix] || distinct != len(list) {
			t.Errorf("%s: codes.go declares %d constants, the list has %d values (%d distinct)", prefix, declared[prefix], len(list), distinct)
		}
	}
}
