package tokens

import (
	"strings"
	"sync"
)

// Encoding is one of OpenAI's byte-pair encodings. Its methods are safe for
// concurrent use.
type Encoding struct {
	name  string
	split func(t []byte, i int) int
	vocab *vocabulary
	memos sync.Pool // of *pieceMemo, one per counting goroutine
	// digits: every run of 1 to 3 ASCII digits is one token and the split
	// never makes a longer one (\p{N}{1,3}), so a digit piece needs no
	// lookup. Hashes and ids in renderings are full of them.
	digits bool
	// asciiWords: the split is o200k_base's, whose ASCII words (most
	// pieces of a rendering) Count splits itself without calling split.
	asciiWords bool
}

var (
	o200kBase  = &Encoding{name: "o200k_base", split: fastO200k, digits: true, asciiWords: true, vocab: &vocabulary{name: "o200k_base", data: o200kData}}
	cl100kBase = &Encoding{name: "cl100k_base", split: fastCl100k, digits: true, vocab: &vocabulary{name: "cl100k_base", data: cl100kData}}
	p50kBase   = &Encoding{name: "p50k_base", split: splitGPT2, vocab: &vocabulary{name: "p50k_base", data: p50kData}}
	r50kBase   = &Encoding{name: "r50k_base", split: splitGPT2, vocab: &vocabulary{name: "r50k_base", data: r50kData}}
)

// encodings are the names Lookup accepts besides model names.
var encodings = map[string]*Encoding{
	"o200k_base": o200kBase, "cl100k_base": cl100kBase, "p50k_base": p50kBase, "r50k_base": r50kBase,
	"gpt2": r50kBase, // tiktoken's name for r50k_base's vocabulary
}

// models maps OpenAI model names to their encodings, as tiktoken's
// model.py does; modelPrefixes covers dated and fine-tuned variants.
var models = map[string]*Encoding{
	"gpt-5": o200kBase, "gpt-4.1": o200kBase, "gpt-4o": o200kBase, "gpt-4.5": o200kBase,
	"o1": o200kBase, "o3": o200kBase, "o4-mini": o200kBase, "gpt-oss-120b": o200kBase, "gpt-oss-20b": o200kBase,
	"chatgpt-4o-latest": o200kBase, "codex-mini-latest": o200kBase,
	"gpt-4": cl100kBase, "gpt-3.5-turbo": cl100kBase, "gpt-3.5": cl100kBase, "gpt-35-turbo": cl100kBase,
	"davinci-002": cl100kBase, "babbage-002": cl100kBase,
	"text-embedding-ada-002": cl100kBase, "text-embedding-3-small": cl100kBase, "text-embedding-3-large": cl100kBase,
	"text-davinci-003": p50kBase, "text-davinci-002": p50kBase, "code-davinci-002": p50kBase, "code-davinci-001": p50kBase,
	"code-cushman-002": p50kBase, "code-cushman-001": p50kBase, "davinci-codex": p50kBase, "cushman-codex": p50kBase,
	"text-davinci-001": r50kBase, "text-curie-001": r50kBase, "text-babbage-001": r50kBase, "text-ada-001": r50kBase,
	"davinci": r50kBase, "curie": r50kBase, "babbage": r50kBase, "ada": r50kBase, "gpt2": r50kBase,
}

var modelPrefixes = []struct {
	prefix string
	enc    *Encoding
}{
	{"o1-", o200kBase}, {"o3-", o200kBase}, {"o4-mini-", o200kBase}, {"gpt-5-", o200kBase}, {"gpt-4.5-", o200kBase},
	{"gpt-4.1-", o200kBase}, {"chatgpt-4o-", o200kBase}, {"gpt-4o-", o200kBase}, {"gpt-oss-", o200kBase},
	{"gpt-4-", cl100kBase}, {"gpt-3.5-turbo-", cl100kBase}, {"gpt-35-turbo-", cl100kBase},
	{"ft:gpt-4o", o200kBase}, {"ft:gpt-4.1", o200kBase}, {"ft:gpt-4", cl100kBase}, {"ft:gpt-3.5-turbo", cl100kBase},
	{"ft:davinci-002", cl100kBase}, {"ft:babbage-002", cl100kBase},
}

// Lookup returns the encoding an encoding name (o200k_base, cl100k_base,
// p50k_base, r50k_base) or an OpenAI model name (gpt-4o, gpt-4.1-mini,
// gpt-4-0613, …) stands for; false for any other name.
func Lookup(name string) (*Encoding, bool) {
	if e, ok := encodings[name]; ok {
		return e, true
	}
	if e, ok := models[name]; ok {
		return e, true
	}
	// The longest matching prefix wins: ft:gpt-4o before ft:gpt-4.
	var best *Encoding
	bestLen := 0
	for _, p := range modelPrefixes {
		if len(p.prefix) > bestLen && strings.HasPrefix(name, p.prefix) {
			best, bestLen = p.enc, len(p.prefix)
		}
	}
	return best, best != nil
}

// Name is the encoding's name, e.g. "o200k_base".
func (e *Encoding) Name() string { return e.name }

// Count returns the number of tokens the encoding gives text.
func (e *Encoding) Count(text []byte) int64 {
	ranks := e.vocab.get()
	var m *pieceMemo // taken on the first piece of 3 bytes or more
	var n int64
	for i := 0; i < len(text); {
		if e.digits && text[i]-'0' <= 9 {
			// An ASCII digit starts a piece of at most 3 digits: counted here
			// without a split or a lookup, unless a non-ASCII rune (which may
			// be a digit too) follows the digits.
			end := i + 1
			for end < len(text) && end < i+3 && text[end]-'0' <= 9 {
				end++
			}
			if end == len(text) || text[end] < 0x80 {
				n++
				i = end
				continue
			}
		}
		end := -1
		if e.asciiWords {
			// fastO200k's ASCII word, inlined: letters, upper then lower
			// case, after an optional space or symbol, followed by an ASCII
			// byte other than an apostrophe (a contraction) or by the end.
			j := i
			if k := asciiKinds[text[i]]; k == kindSpace || k == kindSymbol {
				j++
			}
			if j < len(text) && (asciiKinds[text[j]] == kindLower || asciiKinds[text[j]] == kindUpper) {
				if w := asciiLetters(text, j); w == len(text) || text[w] < 0x80 && text[w] != '\'' {
					end = w
				}
			}
		}
		if end < 0 {
			end = e.split(text, i)
		}
		switch piece := text[i:end]; {
		case e.digits && text[i]-'0' <= 9 && asciiDigits(piece):
			n++
		case len(piece) >= 3 && len(piece) <= maxMid:
			if m == nil {
				m, _ = e.memos.Get().(*pieceMemo)
				if m == nil {
					m = new(pieceMemo)
				}
			}
			n += m.count(ranks, piece)
		default:
			n += pieceCount(ranks, piece)
		}
		i = end
	}
	if m != nil {
		e.memos.Put(m)
	}
	return n
}

// asciiDigits reports whether piece is ASCII digits only.
func asciiDigits(piece []byte) bool {
	for _, c := range piece {
		if c-'0' > 9 {
			return false
		}
	}
	return len(piece) > 0
}
