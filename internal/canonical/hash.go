package canonical

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
)

// Hash returns the lowercase hex SHA-256 of the canonical encoding of v. Any
// error wraps ErrNotCanonical. Safe for concurrent use.
func Hash(v any) (string, error) {
	b, err := Encode(v)
	if err != nil {
		return "", err
	}
	return HashBytes(b), nil
}

// HashBytes returns the lowercase hex SHA-256 of b.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// EncodeHashWithout returns the canonical encoding of the object m and the
// hash Hash would return for m without its member omit, from one encoding:
// the omitted member's bytes are left out of the hashed input. It is for
// values stored whole but hashed without a member (a checkpoint without its
// created_at). Any error wraps ErrNotCanonical.
func EncodeHashWithout(m map[string]any, omit string) ([]byte, string, error) {
	var e encoder
	keys := slices.Sorted(maps.Keys(m))
	// cut is the omitted member with one adjacent comma: [cutFrom, cutTo).
	cutFrom, cutTo := -1, -1
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		from := len(e.buf)
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.string(k); err != nil {
			return nil, "", err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(m[k], 1); err != nil {
			return nil, "", err
		}
		if k == omit {
			cutFrom, cutTo = from, len(e.buf)
			if i == 0 && len(keys) > 1 {
				cutTo++ // the comma that opens the next member
			}
		}
	}
	e.buf = append(e.buf, '}')
	h := sha256.New()
	if cutFrom < 0 {
		h.Write(e.buf)
	} else {
		h.Write(e.buf[:cutFrom])
		h.Write(e.buf[cutTo:])
	}
	return e.buf, hex.EncodeToString(h.Sum(nil)), nil
}
