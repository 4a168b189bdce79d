package engine

import (
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/tokens"
)

// Counter names, recorded as a budget's counter and a checkpoint's
// accounting_counter: which count the estimate stands on.
const (
	// CounterUTF8Bytes is conservative_utf8's byte count.
	CounterUTF8Bytes = "utf8_bytes"
	// CounterApprox is the word-piece estimate used for tokenizer names
	// Cairn has no vocabulary for.
	CounterApprox = "approx_v1"
	// CounterReportedUsage is reported_usage_delta_v2's provider count.
	CounterReportedUsage = "reported_usage"
	// A BPE count is named by its encoding: o200k_base, cl100k_base,
	// p50k_base or r50k_base.
)

// counter counts the tokens of text for one tokenizer name: exactly with
// the encoding's BPE when Cairn knows the name (an encoding, or an OpenAI
// model name such as "gpt-4o"), else with the word-piece estimate.
type counter struct {
	name string
	enc  *tokens.Encoding // nil for the estimate
}

// counterFor returns the counter for a tokenizer name; false means the
// name is not a tokenizer (blank or absurdly long).
func counterFor(name string) (counter, bool) {
	if enc, ok := tokens.Lookup(name); ok {
		return counter{name: enc.Name(), enc: enc}, true
	}
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		return counter{}, false
	}
	return counter{name: CounterApprox}, true
}

func (c counter) count(text []byte) int64 {
	if c.enc != nil {
		return c.enc.Count(text)
	}
	return approxTokens(text)
}

// approxTokens is the word-piece estimate for tokenizers without a
// vocabulary ("static", a model Cairn does not know). It is calibrated to
// over-count English, code and JSON slightly against BPE vocabularies:
//   - a run of ASCII letters and digits costs ceil(len/4) tokens (a single
//     space before it is merged into it, as BPE does);
//   - any other ASCII punctuation or symbol byte costs 1 token;
//   - a run of whitespace (other than that single merged space) costs 1;
//   - every non-ASCII rune costs 1 token (CJK is about one token per rune).
//
// The budget adds its own 10 % margin and protocol reserve on top.
func approxTokens(text []byte) int64 {
	var tokens int64
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isWordByte(c):
			j := i
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			tokens += int64(j-i+3) / 4
			i = j
		case c == ' ' && i+1 < len(text) && isWordByte(text[i+1]):
			i++ // merged into the following word
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
				i++
			}
			tokens++
		case c < utf8.RuneSelf:
			tokens++
			i++
		default:
			_, size := utf8.DecodeRune(text[i:])
			tokens++
			i += size
		}
	}
	return tokens
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
