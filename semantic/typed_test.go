package semantic

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// The typed paths (Validate, Normalize and the uniqueness check) must agree
// with Parse of the map form on every value, valid or not, and the encoding
// with encoding/json's reading of the same types. semanticGen draws values
// near every bound.

// semanticGen draws semantics; with faults, about one value in faults is
// outside the schema (empty, oversized, invalid UTF-8, a bad enum...).
type semanticGen struct {
	r      *rand.Rand
	faults int
}

func (g semanticGen) pick(n int) int { return g.r.IntN(n) }

// fault reports whether to draw a bad value this time.
func (g semanticGen) fault() bool { return g.faults > 0 && g.pick(g.faults) == 0 }

// text is mostly short text (some escaped or non-ASCII) and with faults
// sometimes empty, oversized or invalid UTF-8.
func (g semanticGen) text(maximum int) string {
	if g.fault() {
		return []string{"", strings.Repeat("x", maximum+1), "bad \xff utf8"}[g.pick(3)]
	}
	return []string{"a", "b", "same text", strings.Repeat("y", maximum),
		"quote \" back \\ ctl \x01\n\t end", "naïve – 日本語 \u2028"}[g.pick(6)]
}

func (g semanticGen) id() string {
	if g.fault() {
		return []string{"", strings.Repeat("i", IDMaxBytes+1), "id-\xfe"}[g.pick(3)]
	}
	return []string{"e1", "e2", "e3", "01890a5d-ac96-774b-bcce-b302099a8057"}[g.pick(4)]
}

// ids draws a list of 1..3 ids, with faults also none, too many or a
// repeated one.
func (g semanticGen) ids() []string {
	if g.fault() {
		switch g.pick(3) {
		case 0:
			return nil
		case 1:
			return []string{"dup", "dup"}
		}
		list := make([]string, limits.SourceEventIDs+1)
		for i := range list {
			list[i] = "id" + strings.Repeat("z", i+1)
		}
		return list
	}
	list := make([]string, 1+g.pick(3))
	for i := range list {
		list[i] = []string{"e1", "e2", "e3", "e4", "e5", "e6"}[i*2+g.pick(2)]
	}
	return list
}

// verificationIDs may be empty (nil or not) without a fault.
func (g semanticGen) verificationIDs() []string {
	switch g.pick(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	return g.ids()
}

func (g semanticGen) nullable(maximum int) *string {
	if g.pick(3) == 0 {
		return nil
	}
	s := g.text(maximum)
	return &s
}

// genList draws 0..3 entries (nil or empty for none), sometimes with a
// duplicate, and with faults sometimes one entry too many.
func genList[T any](g semanticGen, maximum int, entry func() T) []T {
	n := g.pick(4)
	if g.fault() {
		n = maximum + 1
	}
	if n == 0 && g.pick(2) == 0 {
		return nil
	}
	list := make([]T, n)
	for i := range list {
		list[i] = entry()
	}
	if n > 1 && g.pick(3) == 0 {
		list[n-1] = list[0] // a duplicate entry
	}
	return list
}

func (g semanticGen) sourced() Sourced {
	return Sourced{Text: g.text(limits.TextBytes), SourceEventIDs: g.ids()}
}

func (g semanticGen) requestStatus() string {
	if g.fault() {
		return "bogus"
	}
	return []string{RequestActive, RequestCompleted, RequestSuperseded}[g.pick(3)]
}

func (g semanticGen) userRequest() UserRequest {
	r := UserRequest{SourceEventID: g.id(), Status: g.requestStatus()}
	if g.fault() {
		if g.pick(2) == 0 { // both
			r.ExactExcerpt = g.nullable(limits.TextBytes)
			r.SecretOmission = g.omission()
		}
		return r // or neither
	}
	if g.pick(3) == 0 {
		r.SecretOmission = g.omission()
	} else {
		s := g.text(limits.TextBytes)
		r.ExactExcerpt = &s
	}
	return r
}

func (g semanticGen) omission() *SecretOmission {
	hash := strings.Repeat("ab", 32)
	if g.fault() {
		hash = []string{strings.Repeat("AB", 32), "abc"}[g.pick(2)]
	}
	return &SecretOmission{Class: g.text(ClassMaxBytes), SourceSpanHash: hash}
}

func (g semanticGen) decision() Decision {
	return Decision{Text: g.text(limits.TextBytes), Rationale: g.nullable(limits.TextBytes), SourceEventIDs: g.ids()}
}

func (g semanticGen) progressItem() ProgressItem {
	return ProgressItem{Text: g.text(limits.TextBytes), SourceEventIDs: g.ids(), VerificationEventIDs: g.verificationIDs()}
}

func (g semanticGen) errorEntry() ErrorEntry {
	status := []string{ErrorOpen, ErrorResolved}[g.pick(2)]
	if g.fault() {
		status = "closed"
	}
	return ErrorEntry{Message: g.text(limits.TextBytes), Status: status, SourceEventIDs: g.ids()}
}

func (g semanticGen) artifactRef() ArtifactRef {
	return ArtifactRef{ArtifactID: g.id(), Purpose: g.text(limits.TextBytes), SourceEventIDs: g.ids()}
}

func (g semanticGen) semantic() *Semantic {
	s := &Semantic{
		Version:         Version,
		Objective:       genList(g, limits.Objective, g.sourced),
		UserRequests:    genList(g, limits.UserRequests, g.userRequest),
		Constraints:     genList(g, limits.Constraints, g.sourced),
		Decisions:       genList(g, limits.Decisions, g.decision),
		CriticalContext: genList(g, limits.CriticalContext, g.sourced),
		Errors:          genList(g, limits.Errors, g.errorEntry),
		ArtifactRefs:    genList(g, limits.ArtifactRefs, g.artifactRef),
		Progress: Progress{
			Completed: genList(g, limits.ProgressCompleted, g.progressItem),
			Active:    genList(g, limits.ProgressActive, g.progressItem),
			Blocked:   genList(g, limits.ProgressBlocked, g.progressItem),
			Pending:   genList(g, limits.ProgressPending, g.progressItem),
		},
		Coverage: Coverage{FirstChatSeq: 1 + int64(g.pick(3)), LastChatSeq: 3 + int64(g.pick(3))},
	}
	if g.fault() {
		s.Coverage.FirstChatSeq = []int64{0, -1, 7}[g.pick(3)]
	}
	if g.fault() {
		s.Version = 2
	}
	return s
}

func sameError(t *testing.T, what string, got, want error) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	if got != nil && errcode.As(got) == nil && !errorsIsNotCanonical(got) {
		t.Fatalf("%s: untyped error %v", what, got)
	}
}

func errorsIsNotCanonical(err error) bool {
	return strings.Contains(err.Error(), canonical.ErrNotCanonical.Error())
}

func TestTypedShapeCheckMatchesParseOfMap(t *testing.T) {
	g := semanticGen{r: rand.New(rand.NewPCG(1, 2)), faults: 150}
	valid := 0
	for range 1_000 {
		s := g.semantic()
		want, wantErr := Parse(s.Map())
		sameError(t, "Validate", s.Validate(), wantErr)
		got, gotErr := Normalize(s)
		sameError(t, "Normalize", gotErr, wantErr)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Normalize = %#v, want %#v", got, want)
		}
		if wantErr == nil {
			valid++
		}
	}
	if valid < 100 {
		t.Fatalf("only %d valid semantics drawn", valid)
	}
}

func TestNormalizeCopies(t *testing.T) {
	s := baseSemantic(t)
	n, err := Normalize(s)
	if err != nil {
		t.Fatal(err)
	}
	*n.UserRequests[0].ExactExcerpt = "changed"
	n.Objective[0].SourceEventIDs[0] = "changed"
	if *s.UserRequests[0].ExactExcerpt == "changed" || s.Objective[0].SourceEventIDs[0] == "changed" {
		t.Fatal("Normalize shares memory with its input")
	}
	if _, err := Normalize(nil); err == nil {
		t.Fatal("Normalize(nil) passed")
	}
}

// The canonical encoding holds what encoding/json writes for the same
// value, keys sorted: every field under its json name, a nil list as [].
// A field the encoder missed, or named otherwise, fails here.
func TestAppendCanonicalMatchesEncodingJSON(t *testing.T) {
	g := semanticGen{r: rand.New(rand.NewPCG(3, 4)), faults: 150}
	for range 1_000 {
		s := g.semantic()
		prefix := []byte("prefix")
		got, err := s.AppendCanonical(prefix)
		if !utf8Valid(s) {
			if !errorsIsNotCanonical(err) || !bytes.Equal(got, prefix) {
				t.Fatalf("AppendCanonical of invalid UTF-8 = %q, %v", got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got[:len(prefix)], prefix) {
			t.Fatalf("AppendCanonical = %q, %v", got, err)
		}
		want := viaEncodingJSON(t, s)
		if !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("AppendCanonical =\n%s\nwant\n%s", got[len(prefix):], want)
		}
		if h, err := s.Hash(); err != nil || h != canonical.HashBytes(want) {
			t.Fatalf("Hash = %q, %v; want %q", h, err, canonical.HashBytes(want))
		}
		if n, err := s.encodedSize(); err != nil || n != len(want) {
			t.Fatalf("encodedSize = %d, %v; want %d", n, err, len(want))
		}
	}
	var none *Semantic
	if b, err := none.AppendCanonical(nil); err != nil || string(b) != "null" {
		t.Fatalf("nil AppendCanonical = %q, %v", b, err)
	}
	if h, err := none.Hash(); err != nil || h != canonical.HashBytes([]byte("{}")) {
		t.Fatalf("nil Hash = %q, %v; want the hash of {}", h, err)
	}
}

// viaEncodingJSON is the canonical form of encoding/json's encoding of s
// with nil lists made empty.
func viaEncodingJSON(t *testing.T, s *Semantic) []byte {
	t.Helper()
	c := s.copy(true)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonical.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := canonical.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// utf8Valid reports whether every string of s is valid UTF-8: encoding/json
// writes each invalid byte as the escape \ufffd (and the generator draws no
// U+FFFD).
func utf8Valid(s *Semantic) bool {
	b, err := json.Marshal(s)
	return err == nil && !bytes.Contains(b, []byte(`\ufffd`))
}

// uniqueByEncoding is the uniqueness rule by its definition: no two entries
// of a list with the same canonical encoding.
func uniqueByEncoding(s *Semantic) bool {
	p := s.Progress
	for _, list := range []any{
		s.Objective, s.UserRequests, s.Constraints, s.Decisions, p.Completed, p.Active, p.Blocked, p.Pending,
		s.CriticalContext, s.Errors, s.ArtifactRefs,
	} {
		entries := plain(reflect.ValueOf(list)).([]any)
		seen := map[string]bool{}
		for _, e := range entries {
			b, _ := canonical.Encode(e)
			if seen[string(b)] {
				return false
			}
			seen[string(b)] = true
		}
	}
	return true
}

func TestUniqueEntriesMatchesEncoding(t *testing.T) {
	g := semanticGen{r: rand.New(rand.NewPCG(5, 6))}
	duplicates := 0
	for range 1_000 {
		s := g.semantic()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		unique := uniqueByEncoding(s)
		if got := uniqueEntries(s) == nil; got != unique {
			t.Fatalf("uniqueEntries unique = %v, encoding says %v for %#v", got, unique, s)
		}
		if !unique {
			duplicates++
		}
	}
	if duplicates < 30 {
		t.Fatalf("only %d semantics with duplicates drawn", duplicates)
	}
}

func baseSemantic(t *testing.T) *Semantic {
	t.Helper()
	s, err := Parse(baseMap(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What ParseJSON accepts, it reads as encoding/json reads it into the same
// types; a field the decoder missed, or named otherwise, fails here.
func TestParseJSONMatchesEncodingJSON(t *testing.T) {
	g := semanticGen{r: rand.New(rand.NewPCG(7, 8))}
	for range 1_000 {
		data, err := g.semantic().AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if want := decodeWithEncodingJSON(t, data); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseJSON = %#v\nencoding/json = %#v", got, want)
		}
	}
}

// decodeWithEncodingJSON decodes data with encoding/json, rejecting unknown
// fields; the version, which may be 1.0, is read apart.
func decodeWithEncodingJSON(t testing.TB, data []byte) *Semantic {
	t.Helper()
	doc := struct {
		*Semantic
		Version json.Number `json:"version"`
	}{Semantic: new(Semantic)}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if v, err := doc.Version.Float64(); err != nil || v != Version {
		t.Fatalf("version %s", doc.Version)
	}
	doc.Semantic.Version = Version
	return doc.Semantic
}
