package offline

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The scans below skip ahead over text that cannot hold what they look
// for; these tests compare them with the byte-by-byte scans they replace,
// kept here as references (sentences with sentencesByRune, in
// keywords_test.go).

// refTrimSpan is trimSpan decoding every rune.
func refTrimSpan(s string, sp span) (span, bool) {
	for sp.start < sp.end {
		r, size := utf8.DecodeRuneInString(s[sp.start:sp.end])
		if !unicode.IsSpace(r) {
			break
		}
		sp.start += size
	}
	for sp.end > sp.start {
		r, size := utf8.DecodeLastRuneInString(s[sp.start:sp.end])
		if !unicode.IsSpace(r) {
			break
		}
		sp.end -= size
	}
	return sp, sp.end > sp.start
}

// refFind is wordIndex.find comparing the words at every position.
func refFind(x *wordIndex, dst []hit, s string) []hit {
	for i := 0; i+1 < len(s); i++ {
		for j, w := range x.words {
			if x.first[s[i]]&x.second[s[i+1]]&(1<<j) != 0 && strings.HasPrefix(s[i:], w) {
				dst = append(dst, hit{i, i + len(w)})
			}
		}
	}
	return dst
}

// refNextMarker is nextMarker a byte at a time.
func refNextMarker(s string, i int) int {
	for i < len(s) && !markers[s[i]] {
		i++
	}
	return i
}

// scanIndexes are the keyword sets find runs with, and two more: one whose
// shortest word is two bytes, and one of words sharing their pairs.
var scanIndexes = []*wordIndex{
	constraintWordIndex, constraintChineseIndex, decisionIndex,
	newWordIndex([]string{"ab", "abab", "b.", "\xE3\x80"}),
	newWordIndex([]string{"aaaa", "aaab", "abab", "baaa"}),
}

// scanPieces are what generated texts are made of: keywords, their
// fragments, breaks, markers, white space and non-ASCII runes.
var scanPieces = []string{
	"must", "mus", "don't", "don’t", "do not", "never", "always", "i'll use", "decided", "instead of",
	"决定", "必须", "不要", "改用", "。", "！", "？", "；", "\xE3", "\xEF\xBC", "\xE3\x80\x82",
	".", "./...", "/...", "v1.2", "!", "?", "\n", "\r\n", "\t", " ", "  ", "\u00a0", "\u0085", "\u3000",
	"#", "-", "/", "0", "42", "a", "b", "ab", "aa", "ba", "x", "Q", "İ", "\xff", "the flaky test",
}

func scanText(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(40) {
		b.WriteString(scanPieces[rng.IntN(len(scanPieces))])
	}
	return b.String()
}

func checkScans(t *testing.T, s string) {
	t.Helper()
	if got, want := sentences(nil, s), sentencesByRune(s); !slices.Equal(got, want) {
		t.Fatalf("sentences(%q) = %v, want %v", s, got, want)
	}
	for i := 0; i <= len(s); i++ {
		for j := i; j <= len(s); j++ {
			got, gotOK := trimSpan(s, span{i, j})
			want, wantOK := refTrimSpan(s, span{i, j})
			if got != want || gotOK != wantOK {
				t.Fatalf("trimSpan(%q, %d, %d) = %v %v, want %v %v", s, i, j, got, gotOK, want, wantOK)
			}
		}
		if got, want := nextMarker(s, i), refNextMarker(s, i); got != want {
			t.Fatalf("nextMarker(%q, %d) = %d, want %d", s, i, got, want)
		}
	}
	for k, x := range scanIndexes {
		if got, want := x.find(nil, s), refFind(x, nil, s); !slices.Equal(got, want) {
			t.Fatalf("index %d: find(%q) = %v, want %v", k, s, got, want)
		}
	}
}

func TestScansMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkScans(t, scanText(rng))
	}
	// Every byte value, in every position of an eight-byte word.
	for c := range 256 {
		for pad := range 9 {
			checkScans(t, strings.Repeat("x", pad)+string([]byte{byte(c)})+" tail")
		}
	}
}

func FuzzScansMatchReference(f *testing.F) {
	for _, s := range []string{"", "Done. must not\nv1.2 ./... 决定。", "aaaaabab b.", "#12 -x /a/b 9.9.9", "\xE3\x80\x82\xEF\xBC\x81 ok"} {
		f.Add(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 64 {
		f.Add(scanText(rng))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 512 {
			s = s[:512] // trimSpan is checked on every span
		}
		checkScans(t, s)
	})
}
