package canonical

import (
	"math"
	"strconv"
)

// AppendFloat appends f in Erlang's float_to_binary(F, [short]) format
// (docs/canonical-json.md, section 3): the shortest round-tripping digits, written as a plain
// decimal when that is no longer than scientific notation, always with a
// fractional part or exponent so it reads back as a float. f must be finite.
func AppendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var scratch [32]byte
	digits, exp := shortest(scratch[:0], f)
	l := len(digits)
	p := exp - l + 1 // value = digits × 10^p
	var esBuf [8]byte
	es := strconv.AppendInt(esBuf[:0], int64(exp), 10)
	cost := len(es) + 2
	if p < 0 {
		switch {
		case exp >= 0:
			dst = append(dst, digits[:l+p]...)
			dst = append(dst, '.')
			return append(dst, digits[l+p:]...)
		case 2-p-l <= cost:
			dst = append(dst, "0."...)
			for range -p - l {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		}
		return appendScientific(dst, digits, es)
	}
	dot := 0
	if l == 1 {
		dot = 1
	}
	if cost+dot >= p+2 && f < 1<<53 {
		dst = append(dst, digits...)
		for range p {
			dst = append(dst, '0')
		}
		return append(dst, ".0"...)
	}
	return appendScientific(dst, digits, es)
}

// shortest returns the shortest decimal digits that round-trip f (f > 0) and
// the decimal exponent of the first digit.
func shortest(dst []byte, f float64) (digits []byte, exp int) {
	b := strconv.AppendFloat(dst, f, 'e', -1, 64) // d[.ddd]e±XX
	mark := 0
	for mark < len(b) && b[mark] != 'e' {
		mark++
	}
	e, _ := strconv.Atoi(string(b[mark+1:]))
	digits = b[:0:0]
	digits = append(digits, b[0])
	if mark > 1 {
		digits = append(digits, b[2:mark]...)
	}
	return digits, e
}

func appendScientific(dst, digits, es []byte) []byte {
	dst = append(dst, digits[0], '.')
	if len(digits) == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	return append(dst, es...)
}
