package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizers below split text exactly as tiktoken's patterns do,
// as loops over runes instead of a backtracking regular expression (which
// counts a few megabytes a second). Each returns the end of the piece that
// starts at i < len(t); the alternatives are tried in the pattern's order
// and each takes what the pattern's greedy loops, with their backtracking,
// would take. The patterns, for reference:
//
//	o200k_base:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	            |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	            |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	cl100k_base: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//	            | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	p50k_base, r50k_base: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// Invalid UTF-8 bytes are read as U+FFFD, a symbol.

// Character classes; a rune may have several.
const (
	classL     = 1 << iota // \p{L}
	classN                 // \p{N}
	classS                 // \s
	classUpper             // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	classLower             // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	classCRLF              // [\r\n]
)

var asciiClasses = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		t[c] = classify(rune(c))
	}
	return t
}()

func classify(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= classL
	}
	if unicode.IsNumber(r) {
		c |= classN
	}
	if unicode.IsSpace(r) {
		c |= classS
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= classUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= classLower
	}
	if r == '\r' || r == '\n' {
		c |= classCRLF
	}
	return c
}

// at returns the classes and size of the rune at i (0, 0 at the end).
func at(t []byte, i int) (uint8, int) {
	if i >= len(t) {
		return 0, 0
	}
	if b := t[i]; b < utf8.RuneSelf {
		return asciiClasses[b], 1
	}
	r, n := utf8.DecodeRune(t[i:])
	return classify(r), n
}

// before returns the classes and size of the rune ending at i.
func before(t []byte, i int) (uint8, int) {
	if b := t[i-1]; b < utf8.RuneSelf {
		return asciiClasses[b], 1
	}
	r, n := utf8.DecodeLastRune(t[:i])
	return classify(r), n
}

// run returns the end of the run of runes having any of want from i.
func run(t []byte, i int, want uint8) int {
	for i < len(t) {
		c, n := at(t, i)
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// runMax is run limited to max runes.
func runMax(t []byte, i int, want uint8, max int) int {
	for ; max > 0 && i < len(t); max-- {
		c, n := at(t, i)
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// isPrefixClass is [^\r\n\p{L}\p{N}].
func isPrefixClass(c uint8) bool { return c&(classCRLF|classL|classN) == 0 }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(c uint8) bool { return c&(classS|classL|classN) == 0 }

// contraction returns the end of 's 't 're 've 'm 'll 'd at i, or -1;
// fold makes it case-insensitive (ſ folds to s).
func contraction(t []byte, i int, fold bool) int {
	if i+1 >= len(t) || t[i] != '\'' {
		return -1
	}
	lower := func(b byte) byte {
		if fold && b >= 'A' && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
	switch lower(t[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(t) && lower(t[i+2]) == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(t) && lower(t[i+2]) == 'l' {
			return i + 3
		}
	case 0xC5: // ſ is C5 BF
		if fold && i+2 < len(t) && t[i+2] == 0xBF {
			return i + 3
		}
	}
	return -1
}

// withContraction extends a letter piece ending at e by an optional
// case-insensitive contraction.
func withContraction(t []byte, e int) int {
	if e >= len(t) || t[e] != '\'' { // nearly always: no call
		return e
	}
	if end := contraction(t, e, true); end >= 0 {
		return end
	}
	return e
}

// spaces handles the three whitespace alternatives shared by the patterns
// at i, a whitespace rune: \s*[\r\n]+ (when crlf), then \s+(?!\S), then \s+.
func spaces(t []byte, i int, crlf bool) int {
	k := run(t, i, classS)
	if crlf {
		for m := k; m > i; {
			c, n := before(t, m)
			if c&classCRLF != 0 {
				return m
			}
			m -= n
		}
	}
	if k == len(t) {
		return k
	}
	if _, n := before(t, k); k-n > i {
		return k - n
	}
	return k
}

// symbols is ` ?[^\s\p{L}\p{N}]+` followed by a run of tail at i, or -1.
func symbols(t []byte, i int, tail func(b byte) bool) int {
	j := i
	if t[i] == ' ' {
		j++
	}
	if j >= len(t) {
		return -1
	}
	c, n := at(t, j)
	if !isSymbol(c) {
		return -1
	}
	k := j + n
	for k < len(t) {
		c, n := at(t, k)
		if !isSymbol(c) {
			break
		}
		k += n
	}
	for tail != nil && k < len(t) && tail(t[k]) {
		k++
	}
	return k
}

func crlf(b byte) bool      { return b == '\r' || b == '\n' }
func crlfSlash(b byte) bool { return b == '\r' || b == '\n' || b == '/' }

// o200kLower is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at j, or -1: the upper run, then a lower run, giving back upper runes
// (Lm, Lo and M are both) until a lower one can start.
func o200kLower(t []byte, j int) int {
	k := run(t, j, classUpper)
	if c, _ := at(t, k); c&classLower != 0 {
		return run(t, k, classLower)
	}
	for m := k; m > j; {
		c, n := before(t, m)
		if c&classLower != 0 {
			return m
		}
		m -= n
	}
	return -1
}

// o200kUpper is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// at j, or -1.
func o200kUpper(t []byte, j int) int {
	if c, _ := at(t, j); c&classUpper == 0 {
		return -1
	}
	return run(t, run(t, j, classUpper), classLower)
}

func splitO200k(t []byte, i int) int {
	c, n := at(t, i)
	prefixed := isPrefixClass(c)
	for _, letters := range [2]func([]byte, int) int{o200kLower, o200kUpper} {
		if prefixed {
			if e := letters(t, i+n); e >= 0 {
				return withContraction(t, e)
			}
		}
		if e := letters(t, i); e >= 0 {
			return withContraction(t, e)
		}
	}
	if c&classN != 0 {
		return runMax(t, i, classN, 3)
	}
	if e := symbols(t, i, crlfSlash); e >= 0 {
		return e
	}
	if c&classS != 0 {
		return spaces(t, i, true)
	}
	return i + n
}

func splitCl100k(t []byte, i int) int {
	if e := contraction(t, i, true); e >= 0 {
		return e
	}
	c, n := at(t, i)
	if isPrefixClass(c) {
		if next, _ := at(t, i+n); next&classL != 0 {
			return run(t, i+n, classL)
		}
	}
	if c&classL != 0 {
		return run(t, i, classL)
	}
	if c&classN != 0 {
		return runMax(t, i, classN, 3)
	}
	if e := symbols(t, i, crlf); e >= 0 {
		return e
	}
	if c&classS != 0 {
		return spaces(t, i, true)
	}
	return i + n
}

func splitGPT2(t []byte, i int) int {
	if e := contraction(t, i, false); e >= 0 {
		return e
	}
	j := i
	if t[i] == ' ' {
		j++
	}
	switch c, _ := at(t, j); {
	case c&classL != 0:
		return run(t, j, classL)
	case c&classN != 0:
		return run(t, j, classN)
	}
	if e := symbols(t, i, nil); e >= 0 {
		return e
	}
	c, n := at(t, i)
	if c&classS != 0 {
		return spaces(t, i, false)
	}
	return i + n
}
