package tokens

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/tiktoken-go/tokenizer"
)

// The oracle is github.com/tiktoken-go/tokenizer: tiktoken's patterns run
// by a backtracking regular expression and its own byte-pair merge. Its
// vocabularies are the source of the embedded ones (genvocab.go). Its
// regular expression engine ends \s*[\r\n]+ at the first line break of a
// run such as "\r\n\t\r\n", where tiktoken takes the whole run, so
// texts with line breaks are left to the js-tiktoken reference
// (corpus_test.go) and kept out of these comparisons; so are control
// characters, since its p50k_base and r50k_base patterns match no piece at
// all at a lone DEL (js-tiktoken, like tiktoken, counts one token).
func oracle(t testing.TB, name string) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.Encoding(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var allEncodings = []*Encoding{o200kBase, cl100kBase, p50kBase, r50kBase}

// alphabet holds the characters the patterns treat differently: cases of
// letters (Lt, Lm, Lo, marks), numbers beyond ASCII, whitespace beyond the
// space, contractions' pieces, slashes and symbols.
var alphabet = []string{
	"a", "b", "Z", "Q", "é", "É", "ǅ", "ʰ", "中", "文", "\u0301", "\u0903",
	"0", "7", "٣", "Ⅻ", "½",
	" ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\u2028",
	"'", "'s", "'S", "'ll", "'re", "'ve", "'ſ", "'T", "'d", "'m",
	"/", "//", "{", "}", "\"", ":", ",", ".", "!", "-", "_", "\\n", "😀", "👍🏽", "\x1b[31m", "\v", "\f",
	"the", " the", "The", "HTTP", "func", "return", "error", "ing", "ID", "json",
}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

func TestCountMatchesOracleOnRandomText(t *testing.T) {
	for _, e := range allEncodings {
		want := oracle(t, e.Name())
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 3000 {
			text := randomText(rng, 1+rng.IntN(40))
			n, err := want.Count(text)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Count([]byte(text)); got != int64(n) {
				_, pieces, _ := want.Encode(text)
				t.Fatalf("%s case %d %q: got %d want %d (%q)", e.Name(), i, text, got, n, pieces)
			}
		}
	}
}

func TestCountMatchesOracleOnExampleLanes(t *testing.T) {
	for _, file := range []string{"../../examples/coding-agent-lane.json", "../../examples/small-lane.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range allEncodings {
			n, err := oracle(t, e.Name()).Count(string(data))
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Count(data); got != int64(n) {
				t.Errorf("%s %s: got %d want %d", file, e.Name(), got, n)
			}
		}
	}
}

// Long pieces take the heap merge; a run of symbols and one of spaces
// check it against the oracle.
func TestCountMatchesOracleOnLongPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	symbols := []string{"=", "-", "*", "#", "!", "?", "/", "{", "}", "😀"}
	for _, e := range allEncodings {
		want := oracle(t, e.Name())
		for i := range 50 {
			var b strings.Builder
			for range 100 + rng.IntN(400) {
				b.WriteString(symbols[rng.IntN(len(symbols))])
			}
			text := b.String()
			if i%5 == 0 {
				text = strings.Repeat(" ", 200+i) + "x"
			}
			n, _ := want.Count(text)
			if got := e.Count([]byte(text)); got != int64(n) {
				t.Fatalf("%s %q: got %d want %d", e.Name(), text, got, n)
			}
		}
	}
}

func FuzzCountMatchesOracle(f *testing.F) {
	f.Add("hello world", uint8(0))
	f.Add("it's DON'T\r\n\n  x", uint8(1))
	f.Add("中文 😀 ǅa ʰb", uint8(2))
	f.Fuzz(func(t *testing.T, text string, which uint8) {
		if !utf8Valid(text) || strings.IndexFunc(text, unicode.IsControl) >= 0 {
			t.Skip()
		}
		e := allEncodings[int(which)%len(allEncodings)]
		n, err := oracle(t, e.Name()).Count(text)
		if err != nil {
			t.Skip()
		}
		if got := e.Count([]byte(text)); got != int64(n) {
			t.Fatalf("%s %q: got %d want %d", e.Name(), text, got, n)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
