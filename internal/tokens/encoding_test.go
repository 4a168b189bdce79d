package tokens

import (
	"fmt"
	"strconv"
	"testing"
)

// Model names map to encodings as tiktoken's model.py maps them; a name
// Cairn does not know, and a known one in another case, map to nothing
// (tiktoken's names are case-sensitive, and so are the profiles').
func TestLookupMapsNamesToEncodings(t *testing.T) {
	cases := []struct {
		name string
		want *Encoding // nil: not a name Cairn knows
	}{
		{"o200k_base", o200kBase}, {"cl100k_base", cl100kBase}, {"p50k_base", p50kBase}, {"r50k_base", r50kBase},
		{"gpt2", r50kBase},
		{"gpt-5", o200kBase}, {"gpt-4.1", o200kBase}, {"gpt-4.1-mini", o200kBase}, {"gpt-4o", o200kBase},
		{"gpt-4o-mini", o200kBase}, {"gpt-4o-2024-08-06", o200kBase}, {"chatgpt-4o-latest", o200kBase},
		{"o1", o200kBase}, {"o1-preview", o200kBase}, {"o3-mini", o200kBase}, {"o4-mini", o200kBase},
		{"gpt-oss-120b", o200kBase}, {"ft:gpt-4o-mini:acme::abc123", o200kBase},
		{"gpt-4", cl100kBase}, {"gpt-4-0613", cl100kBase}, {"gpt-4-turbo", cl100kBase}, {"gpt-3.5-turbo", cl100kBase},
		{"gpt-3.5-turbo-0125", cl100kBase}, {"gpt-35-turbo", cl100kBase}, {"text-embedding-3-small", cl100kBase},
		{"ft:gpt-4-0613:acme::x", cl100kBase}, {"ft:gpt-3.5-turbo:acme::x", cl100kBase}, {"ft:davinci-002:acme::x", cl100kBase},
		{"text-davinci-003", p50kBase}, {"code-davinci-002", p50kBase},
		{"text-davinci-001", r50kBase}, {"davinci", r50kBase}, {"ada", r50kBase},
		{"static", nil}, {"claude-3-5-sonnet", nil}, {"llama-3-70b", nil}, {"", nil}, {"o200k", nil},
		{"gpt-4o ", nil}, {" gpt-4o", nil}, {"gpt", nil}, {"o2", nil},
		{"GPT-4o", nil}, {"Gpt-4", nil}, {"O200K_BASE", nil}, {"O1", nil},
	}
	for _, c := range cases {
		got, ok := Lookup(c.name)
		if ok != (c.want != nil) || got != c.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.name, nameOf(got), ok, nameOf(c.want))
		}
	}
}

func nameOf(e *Encoding) string {
	if e == nil {
		return "none"
	}
	return e.Name()
}

// Count takes a digit piece of o200k_base and cl100k_base for one token
// without a lookup (Encoding.digits): every ASCII number of 1 to 3 digits
// must be one token of their vocabularies, and no longer digit run a
// piece, which p50k_base and r50k_base, whose split allows one, show.
func TestDigitPiecesAreTokens(t *testing.T) {
	for _, e := range allEncodings {
		ranks := e.vocab.get()
		missing := 0
		for n := range 1000 {
			for _, s := range []string{strconv.Itoa(n), fmt.Sprintf("%02d", n%100), fmt.Sprintf("%03d", n)} {
				if _, ok := ranks.get([]byte(s)); !ok {
					missing++
				}
			}
		}
		if e.digits && missing > 0 {
			t.Errorf("%s: %d numbers of 1 to 3 digits are no token", e.Name(), missing)
		}
		if long := []byte("12345678"); e.digits && e.split(long, 0) != 3 {
			t.Errorf("%s: a digit piece of %d bytes", e.Name(), e.split(long, 0))
		}
		if !e.digits && missing == 0 {
			t.Errorf("%s: every number of 1 to 3 digits is a token; set digits", e.Name())
		}
	}
}
