package engine

import (
	"strings"
	"unicode/utf8"
)

// Cairn has no vocabulary files: local_tokenizer_v1 uses one deterministic
// approximate counter for every tokenizer name ("static", "o200k_base",
// "cl100k_base", "p50k_base" and model names such as "gpt-4o"). It is a
// word-piece heuristic calibrated to over-count English, code and JSON
// slightly against BPE vocabularies:
//   - a run of ASCII letters and digits costs ceil(len/4) tokens (a single
//     space before it is merged into it, as BPE does);
//   - any other ASCII punctuation or symbol byte costs 1 token;
//   - a run of whitespace (other than that single merged space) costs 1;
//   - every non-ASCII rune costs 1 token (CJK is about one token per rune).
// The budget adds its own 10 % margin and protocol reserve on top.

// knownEncodings are the tokenizer names accepted besides model names.
var knownEncodings = map[string]bool{"static": true, "o200k_base": true, "cl100k_base": true, "p50k_base": true}

// countTokens counts text for the named tokenizer; false means the name is
// not a tokenizer (blank or absurdly long).
func countTokens(name string, text []byte) (int64, bool) {
	if !knownEncodings[name] && (strings.TrimSpace(name) == "" || len(name) > 200) {
		return 0, false
	}
	return approxTokens(text), true
}

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
