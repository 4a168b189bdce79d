package semantic

import (
	"reflect"
	"strings"
	"testing"
)

// Encoding and decoding follow the types by themselves; the value check,
// the uniqueness comparison and redaction are written per field. These
// tests change each field of a value by reflection, so a field added to a
// type fails them until those three know it too.

// eachLeaf calls visit with every field of v below the structs and lists
// that hold them (strings, id lists, nullable values, numbers), depth
// first, with the field's json name.
func eachLeaf(v reflect.Value, name string, visit func(leaf reflect.Value, name string)) {
	switch {
	case v.Kind() == reflect.Struct:
		for _, f := range fieldsOf[v.Type()] {
			eachLeaf(v.Field(f.index), f.name, visit)
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		for i := range v.Len() {
			eachLeaf(v.Index(i), name, visit)
		}
	case v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct:
		visit(v, name) // the pointer itself may be set to nil
		eachLeaf(v.Elem(), name, visit)
	default:
		visit(v, name)
	}
}

// everyListFilled is the base semantic with an entry in every list, and a
// user request with a secret omission first.
func everyListFilled(t *testing.T) *Semantic {
	s := baseSemantic(t)
	omitted := UserRequest{SourceEventID: evUser2, Status: RequestCompleted,
		SecretOmission: &SecretOmission{Class: "password", SourceSpanHash: strings.Repeat("a", 64)}}
	s.UserRequests = append([]UserRequest{omitted}, s.UserRequests...)
	s.CriticalContext = append(s.CriticalContext, Sourced{Text: "context", SourceEventIDs: []string{evUser1}})
	s.Progress.Active = append(s.Progress.Active, ProgressItem{Text: "active", SourceEventIDs: []string{evUser1}})
	s.Progress.Blocked = append(s.Progress.Blocked, ProgressItem{Text: "blocked", SourceEventIDs: []string{evUser1}})
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// leafCount is the number of leaves of s.
func leafCount(s *Semantic) int {
	n := 0
	eachLeaf(reflect.ValueOf(s).Elem(), "", func(reflect.Value, string) { n++ })
	return n
}

// changeLeaf calls change with leaf k of s.
func changeLeaf(s *Semantic, k int, change func(leaf reflect.Value, name string)) {
	i := 0
	eachLeaf(reflect.ValueOf(s).Elem(), "", func(leaf reflect.Value, name string) {
		if i == k {
			change(leaf, name)
		}
		i++
	})
}

// Every field is checked: an empty string, an empty id, a zero number or a
// secret omission beside an excerpt is rejected wherever it is put.
func TestValidateChecksEveryField(t *testing.T) {
	base := everyListFilled(t)
	for k := range leafCount(base) {
		s := base.Clone()
		var field string
		changeLeaf(s, k, func(leaf reflect.Value, name string) {
			field = name
			switch leaf.Kind() {
			case reflect.String:
				leaf.SetString("")
			case reflect.Slice:
				leaf.Set(reflect.Append(leaf, reflect.ValueOf("")))
			case reflect.Int, reflect.Int64:
				leaf.SetInt(0)
			case reflect.Pointer:
				if leaf.IsNil() {
					leaf.Set(reflect.New(leaf.Type().Elem()))
				} else if leaf.Elem().Kind() == reflect.String {
					leaf.Elem().SetString("")
				} else {
					leaf.SetZero()
				}
			}
		})
		if s.Validate() == nil {
			t.Errorf("a bad %s (leaf %d) passes Validate", field, k)
		}
	}
}

// Two entries that differ in any one field are distinct.
func TestUniqueEntriesSeeEveryField(t *testing.T) {
	base := everyListFilled(t)
	lists := listsOf(base)
	for l := range lists {
		s := base.Clone()
		list := listsOf(s)[l]
		list.Set(reflect.Append(list, list.Index(0)))
		s = s.Clone() // the appended entry shares no memory with the first
		if uniqueEntries(s) == nil {
			t.Fatalf("list %d: a repeated entry is unique", l)
		}
		last := listsOf(s)[l].Len() - 1 // the repeat of entry 0
		leaves := 0
		eachLeaf(listsOf(s)[l].Index(last), "", func(reflect.Value, string) { leaves++ })
		for k := range leaves {
			c := s.Clone()
			i, field := 0, ""
			eachLeaf(listsOf(c)[l].Index(last), "", func(leaf reflect.Value, name string) {
				if i == k {
					field = name
					alter(leaf)
				}
				i++
			})
			if uniqueEntries(c) != nil {
				t.Errorf("entries differing in %s count as duplicates", field)
			}
		}
	}
}

// listsOf returns the entry lists of s, settable.
func listsOf(s *Semantic) []reflect.Value {
	var lists []reflect.Value
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			switch {
			case f.Kind() == reflect.Struct:
				walk(f)
			case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
				lists = append(lists, f)
			}
		}
	}
	walk(reflect.ValueOf(s).Elem())
	return lists
}

// alter changes a leaf to another value of its type.
func alter(leaf reflect.Value) {
	switch leaf.Kind() {
	case reflect.String:
		leaf.SetString(leaf.String() + "2")
	case reflect.Slice:
		leaf.Set(reflect.Append(leaf, reflect.ValueOf("e-other")))
	case reflect.Int, reflect.Int64:
		leaf.SetInt(leaf.Int() + 1)
	case reflect.Pointer:
		switch {
		case leaf.IsNil():
			leaf.Set(reflect.New(leaf.Type().Elem()))
		case leaf.Elem().Kind() == reflect.String:
			leaf.Elem().SetString(leaf.Elem().String() + "2")
		default:
			leaf.SetZero()
		}
	}
}

// Every text field is scrubbed: a secret put in any of them is gone from
// the redacted copy. Ids, enums and hashes are not text, and neither is an
// omission's class, the name of a kind of secret, which Redact keeps.
func TestRedactScrubsEveryTextField(t *testing.T) {
	const secret = "sk-SECRET"
	scrub := func(text string) (string, []string) {
		if !strings.Contains(text, secret) {
			return text, nil
		}
		return strings.ReplaceAll(text, secret, "[key]"), []string{"api_key"}
	}
	base := everyListFilled(t)
	for k := range leafCount(base) {
		s := base.Clone()
		var field string
		changeLeaf(s, k, func(leaf reflect.Value, name string) {
			if stringMessage(name) != msgText || name == "class" {
				return
			}
			field = name
			switch {
			case leaf.Kind() == reflect.String:
				leaf.SetString(secret + " " + leaf.String())
			case leaf.Kind() == reflect.Pointer && leaf.Type().Elem().Kind() == reflect.String:
				leaf.Set(reflect.ValueOf(strPtr(secret + " text")))
			}
		})
		if field == "" {
			continue
		}
		out, _ := Redact(s, scrub)
		if b, _ := out.AppendCanonical(nil); strings.Contains(string(b), secret) {
			t.Errorf("a secret in %s (leaf %d) survives Redact: %s", field, k, b)
		}
	}
}
