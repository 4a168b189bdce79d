package tokens

// ASCII fast paths. Most of a rendering is ASCII: a piece that starts and
// ends in ASCII, with an ASCII byte (or the end) after it, is split here
// with byte tests; anything else falls back to the rune-by-rune split,
// which the fast path agrees with (the oracle and corpus tests run both).

type asciiKind uint8

const (
	kindOther asciiKind = iota // non-ASCII, or a control byte other than \t
	kindLower
	kindUpper
	kindDigit
	kindSpace  // space and \t; \r \n \v \f go to the rune-by-rune split
	kindSymbol // printable, not alphanumeric, not space
)

var asciiKinds = func() (k [256]asciiKind) {
	for b := 0; b < 128; b++ {
		switch {
		case b >= 'a' && b <= 'z':
			k[b] = kindLower
		case b >= 'A' && b <= 'Z':
			k[b] = kindUpper
		case b >= '0' && b <= '9':
			k[b] = kindDigit
		case b == ' ' || b == '\t':
			k[b] = kindSpace
		case b > ' ' && b < 0x7f:
			k[b] = kindSymbol
		}
	}
	return k
}()

// asciiEnd reports whether the byte at e is ASCII or e is the end.
func asciiEnd(t []byte, e int) bool { return e >= len(t) || t[e] < 0x80 }

// asciiLetters returns the end of upper- then lower-case ASCII letters
// from j (what both o200k letter alternatives take of ASCII letters).
func asciiLetters(t []byte, j int) int {
	for j < len(t) && asciiKinds[t[j]] == kindUpper {
		j++
	}
	for j < len(t) && asciiKinds[t[j]] == kindLower {
		j++
	}
	return j
}

// asciiRun returns the end of the run of kind from j.
func asciiRun(t []byte, j int, kind asciiKind) int {
	for j < len(t) && asciiKinds[t[j]] == kind {
		j++
	}
	return j
}

func fastO200k(t []byte, i int) int {
	j := i
	switch asciiKinds[t[i]] {
	case kindLower, kindUpper:
	case kindSpace, kindSymbol:
		if i+1 < len(t) && (asciiKinds[t[i+1]] == kindLower || asciiKinds[t[i+1]] == kindUpper) {
			j = i + 1 // the optional leading non-letter
			break
		}
		if asciiKinds[t[i]] == kindSymbol || t[i] == ' ' {
			k := i
			if t[i] == ' ' {
				k++
			}
			e := asciiRun(t, k, kindSymbol)
			if e == k || !asciiEnd(t, e) || e < len(t) && (t[e] == '\r' || t[e] == '\n' || t[e] == '/') {
				return splitO200k(t, i)
			}
			return e
		}
		return splitO200k(t, i)
	case kindDigit:
		e := i + 1
		for e < len(t) && e < i+3 && asciiKinds[t[e]] == kindDigit {
			e++
		}
		if !asciiEnd(t, e) {
			return splitO200k(t, i)
		}
		return e
	default:
		return splitO200k(t, i)
	}
	e := asciiLetters(t, j)
	if e == j || !asciiEnd(t, e) {
		return splitO200k(t, i)
	}
	// ASCII upper case alone (no lower case after it) is the second
	// alternative's match; either way a contraction may follow.
	return withContraction(t, e)
}

func fastCl100k(t []byte, i int) int {
	j := i
	switch asciiKinds[t[i]] {
	case kindLower, kindUpper:
	case kindSpace, kindSymbol:
		if t[i] == '\'' {
			return splitCl100k(t, i) // contractions come first
		}
		if i+1 < len(t) && (asciiKinds[t[i+1]] == kindLower || asciiKinds[t[i+1]] == kindUpper) {
			j = i + 1
			break
		}
		if asciiKinds[t[i]] == kindSymbol || t[i] == ' ' {
			k := i
			if t[i] == ' ' {
				k++
			}
			e := asciiRun(t, k, kindSymbol)
			if e == k || !asciiEnd(t, e) || e < len(t) && (t[e] == '\r' || t[e] == '\n') {
				return splitCl100k(t, i)
			}
			return e
		}
		return splitCl100k(t, i)
	case kindDigit:
		e := i + 1
		for e < len(t) && e < i+3 && asciiKinds[t[e]] == kindDigit {
			e++
		}
		if !asciiEnd(t, e) {
			return splitCl100k(t, i)
		}
		return e
	default:
		return splitCl100k(t, i)
	}
	e := j
	for e < len(t) && (asciiKinds[t[e]] == kindLower || asciiKinds[t[e]] == kindUpper) {
		e++
	}
	if !asciiEnd(t, e) {
		return splitCl100k(t, i)
	}
	return e
}
