package canonical

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// checkAgainstOracle fails tb unless Decode agrees with oracleDecode on
// data: equal values (with equal dynamic types throughout), or an error of
// the oracle's sentinel that is a *DecodeError with a reason and an offset
// inside data. It decodes a copy of data and then overwrites the copy, so
// a value that still pointed into the input would show up as a
// difference.
func checkAgainstOracle(tb testing.TB, data []byte) any {
	tb.Helper()
	want, wantErr := oracleDecode(data)
	input := bytes.Clone(data)
	got, gotErr := Decode(input)
	for i := range input {
		input[i] = 'X'
	}
	if diff := decodeDifference(len(data), got, gotErr, want, wantErr); diff != "" {
		tb.Fatalf("Decode(%q): %s", clip(data), diff)
	}
	return got
}

// decodeDifference describes how Decode's result on an input of n bytes
// differs from the oracle's, or returns "" if it does not.
func decodeDifference(n int, got any, gotErr error, want any, wantErr error) string {
	if wantErr == nil && gotErr == nil {
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("value %#v, oracle %#v", got, want)
		}
		return ""
	}
	if wantErr == nil || gotErr == nil || got != nil {
		return fmt.Sprintf("value %#v error %v, oracle error %v", got, gotErr, wantErr)
	}
	var de *DecodeError
	if !errors.As(gotErr, &de) || !errors.Is(gotErr, wantErr) {
		return fmt.Sprintf("error %#v (%v), oracle %v", gotErr, gotErr, wantErr)
	}
	if de.Reason == "" || de.Offset < 0 || de.Offset > n {
		return fmt.Sprintf("error %#v: no reason, or an offset outside the %d bytes of input", de, n)
	}
	return ""
}

func clip(data []byte) []byte {
	if len(data) > 300 {
		return data[:300]
	}
	return data
}

// corpusInputs returns the byte and string inputs of the stored fuzz
// corpora (go test fuzz v1 files).
func corpusInputs(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob("testdata/fuzz/*/*")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no fuzz corpus found (%v)", err)
	}
	var inputs [][]byte
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for line := range strings.Lines(string(text)) {
			inputs = append(inputs, corpusLiteral(tb, file, strings.TrimSpace(line))...)
		}
	}
	return inputs
}

// corpusLiteral returns the value of one corpus line if it is a []byte or
// string literal.
func corpusLiteral(tb testing.TB, file, line string) [][]byte {
	for _, prefix := range []string{"[]byte(", "string("} {
		if quoted, ok := strings.CutPrefix(line, prefix); ok {
			s, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
			if err != nil {
				tb.Fatalf("%s: %q: %v", file, line, err)
			}
			return [][]byte{[]byte(s)}
		}
	}
	return nil
}

// knownInputs are the inputs of the other decode tests and benchmarks.
func knownInputs(tb testing.TB) [][]byte {
	tb.Helper()
	inputs := corpusInputs(tb)
	for _, s := range []string{
		`null`, ` true `, "\t\r\nfalse", `"a\u00e9\n\/\ud83d\ude00"`, `12`, `-0`, `1.0`, `1e3`, `[]`, `{}`,
		`{"a":[1,{"b":null}],"c":"d"}`, `["\u2028", "é"]`, `[1, 1.0]`, ``, `  `, `{} {}`, `[1,]`, `{"a":1,}`,
		`'a'`, `{a:1}`, `01`, `+1`, `1.`, `1e`, `0x1`, `NaN`, `1e400`, `tru`, "\"a\x01b\"", "\"a\nb\"",
		"\"a\xffb\"", "\"\\n\xff\"", "\"\xed\xa0\x80\"", `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\x41"`,
		`"\u12"`, `"abc`, `[1`, `{"a":1`, `{"a" 1}`, "\ufeff{}", `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`[{"x":{"version":1,"version":1}}]`, strings.Repeat("[", 33) + strings.Repeat("]", 33),
		strings.Repeat("[", 34) + strings.Repeat("]", 34), strings.Repeat("[", 33) + "1" + strings.Repeat("]", 33),
		strings.Repeat(`{"k":`, 100000),
	} {
		inputs = append(inputs, []byte(s))
	}
	enc, err := Encode(eventLike())
	if err != nil {
		tb.Fatal(err)
	}
	return append(inputs, enc, requestBody(tb, 24))
}

func TestDecodeMatchesOracleOnKnownInputs(t *testing.T) {
	for _, in := range knownInputs(t) {
		checkAgainstOracle(t, in)
		// Every prefix too: truncated input fails in every state.
		if len(in) <= 4096 {
			for n := range len(in) {
				checkAgainstOracle(t, in[:n])
			}
		}
	}
}

// stringSpecials are the byte sequences that matter to string scanning.
var stringSpecials = []string{
	`"`, `\`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\x`, `\u00e9`, `\u00E9`, `\u12`, `\u12g4`,
	`\ud83d\ude00`, `\ud800`, `\udc00`, `\ud800\u0041`, `\ud800\n`, `\ud800\udbff`, `\u0000`, `\u001f`, `\u`,
	"\x00", "\x01", "\x1f", " ", "\x7f", "\x80", "\xbf", "\xc0\x80", "\xc3", "\xc3\xa9", "\xe2\x82\xac",
	"\xe2\x82", "\xed\xa0\x80", "\xef\xbf\xbd", "\xf0\x9f\x98\x80", "\xf4\x90\x80\x80", "\xf8", "\xff",
}

// TestDecodeStringsMatchOracle puts each special sequence at every
// position of strings up to two words long and of some around one and two
// 32-byte blocks, as values and keys, closed and unclosed, so every lane of
// the block and word scans and their tails meet each.
func TestDecodeStringsMatchOracle(t *testing.T) {
	filler := strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 2)
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 32, 33, 63, 65, 71} {
		for at := 0; at <= n; at++ {
			for _, special := range stringSpecials {
				text := filler[:at] + special + filler[at:n]
				for _, doc := range []string{
					`"` + text + `"`, `"` + text, `{"` + text + `":1}`, `{"k":"` + text + `","` + text + `":2}`,
					`"` + text + "\xff\"", `"` + text + "\x01\"",
				} {
					checkAgainstOracle(t, []byte(doc))
				}
			}
		}
	}
}

// TestDecodeDuplicatesMatchOracle puts a duplicate at every position of
// objects around the size where members move from the stack to a map, with
// keys chosen to share keyBit bits.
func TestDecodeDuplicatesMatchOracle(t *testing.T) {
	for _, n := range []int{1, 2, 8, 9, 31, 32, 33, 34, 40, 65, 100} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%0*d", 1+i%3, i) // lengths 2-4, few end bytes
		}
		for dup := 0; dup <= n; dup++ {
			var b strings.Builder
			b.WriteString("{")
			for i, k := range keys {
				fmt.Fprintf(&b, `"%s":%d,`, k, i)
			}
			if dup < n {
				fmt.Fprintf(&b, `"%s":"again"}`, keys[dup])
			} else {
				b.WriteString(`"last":[]}`)
			}
			doc := b.String()
			checkAgainstOracle(t, []byte(doc))
			checkAgainstOracle(t, []byte(`[{"x":`+doc+`},`+doc+`]`))
		}
	}
}

// TestDecodeRandomMatchesOracle compares Decode with the oracle on generated
// documents, valid and subtly broken, then checks that the values decoded
// early are unchanged by all the decoding since (decoders are pooled and
// keep caches of strings).
func TestDecodeRandomMatchesOracle(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	g := jsonGen{r: rand.New(rand.NewPCG(1, 2))}
	var docs [][]byte
	var values []any
	for i := range n {
		doc := g.document()
		v := checkAgainstOracle(t, doc)
		if i%10 == 0 {
			docs, values = append(docs, doc), append(values, v)
		}
	}
	for i, doc := range docs {
		want, _ := oracleDecode(doc)
		if !reflect.DeepEqual(values[i], want) {
			t.Fatalf("value decoded from %q changed to %#v", clip(doc), values[i])
		}
	}
}

// FuzzDecodeMatchesOracle checks that Decode agrees with the oracle on any
// input.
func FuzzDecodeMatchesOracle(f *testing.F) {
	for _, in := range knownInputs(f) {
		if len(in) <= 1<<16 {
			f.Add(in)
		}
	}
	g := jsonGen{r: rand.New(rand.NewPCG(3, 4))}
	for range 200 {
		f.Add(g.document())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstOracle(t, data)
	})
}

// jsonGen writes random JSON documents: mostly well formed, with the
// escapes, characters, numbers, keys and depths that decoding treats
// specially, and now and then a defect or a mutation.
type jsonGen struct {
	r   *rand.Rand
	buf []byte
}

func (g *jsonGen) document() []byte {
	g.buf = g.buf[:0]
	g.space()
	if g.r.IntN(20) == 0 {
		g.deep()
	} else {
		g.value(0)
	}
	g.space()
	g.mutate()
	return bytes.Clone(g.buf)
}

func (g *jsonGen) chance(oneIn int) bool { return g.r.IntN(oneIn) == 0 }

func (g *jsonGen) pick(options []string) string { return options[g.r.IntN(len(options))] }

// deep nests single values around MaxDepth.
func (g *jsonGen) deep() {
	levels := MaxDepth - 3 + g.r.IntN(8)
	closers := make([]byte, 0, levels)
	for range levels {
		if g.chance(2) {
			g.buf = append(g.buf, '[')
			closers = append(closers, ']')
		} else {
			g.buf = append(g.buf, `{"k":`...)
			closers = append(closers, '}')
		}
	}
	if g.chance(2) {
		g.value(MaxDepth)
	} else {
		g.buf = append(g.buf, "[]"...)
	}
	for i := len(closers) - 1; i >= 0; i-- {
		g.buf = append(g.buf, closers[i])
	}
}

func (g *jsonGen) value(depth int) {
	kind := g.r.IntN(8)
	if depth >= 4 {
		kind = 3 + g.r.IntN(5) // only scalars deep down; deep() goes deeper
	}
	switch kind {
	case 0, 1:
		g.object(depth)
	case 2:
		g.array(depth)
	case 3, 4:
		g.string()
	case 5:
		g.number()
	case 6:
		g.buf = append(g.buf, g.pick([]string{"true", "false", "null"})...)
	default:
		g.buf = append(g.buf, g.pick([]string{"true", "false", "null", "tru", "nul", "falsy", "nan", "-", "}", "]", ","})...)
	}
}

// keys repeat often, also spelled with escapes, so duplicates turn up.
var genKeys = []string{
	"a", "b", "id", "role", "content", "event_id", "", `\u0061`, `r\u006fle`, `\n`, `\"`, "é", `\u00e9`,
	"\xc3\xa9", "\xff", "chat_seq", "lane_event_ordinal", "aa", "ab", "ba", "k\x01",
}

func (g *jsonGen) object(depth int) {
	g.buf = append(g.buf, '{')
	n := g.r.IntN(5)
	if g.chance(10) {
		n = 28 + g.r.IntN(12) // around stackedMembersMax
	}
	for i := range n {
		if i > 0 {
			g.comma()
		}
		g.space()
		g.key(n)
		g.space()
		if !g.chance(200) {
			g.buf = append(g.buf, ':')
		}
		g.space()
		g.value(depth + 1)
		g.space()
	}
	if n > 0 && g.chance(100) {
		g.buf = append(g.buf, ',')
	}
	g.buf = append(g.buf, '}')
}

func (g *jsonGen) key(members int) {
	switch {
	case members > 8 && !g.chance(members):
		g.buf = fmt.Appendf(g.buf, `"m%d"`, g.r.IntN(members*4))
	case g.chance(4):
		g.string()
	default:
		g.buf = append(g.buf, '"')
		g.buf = append(g.buf, g.pick(genKeys)...)
		g.buf = append(g.buf, '"')
	}
}

func (g *jsonGen) array(depth int) {
	g.buf = append(g.buf, '[')
	n := g.r.IntN(5)
	for i := range n {
		if i > 0 {
			g.comma()
		}
		g.space()
		g.value(depth + 1)
		g.space()
	}
	if n > 0 && g.chance(100) {
		g.buf = append(g.buf, ',')
	}
	g.buf = append(g.buf, ']')
}

func (g *jsonGen) comma() {
	if !g.chance(200) {
		g.buf = append(g.buf, ',')
	}
}

func (g *jsonGen) space() {
	for g.chance(4) {
		g.buf = append(g.buf, g.pick([]string{" ", "\t", "\n", "\r", " ", "\f", "\u00a0"})...)
	}
}

// genPieces make up strings; the plain runs are long enough to cross
// word boundaries.
var genPieces = []string{
	"plain text ", "x", "the deploy uses blue-green releases", "func cut() int {", "    ",
	`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u00E9`, `\u2028`, `\uFFFF`, `\u0000`,
	`\ud83d\ude00`, `\uD83D\uDE00`, `\udbff\udfff`, `\ud800`, `\udc00`, `\ud800\u0041`, `\ud800\n`, `\ud800x`,
	`\u12`, `\u12g4`, `\x`, `\`, `\u`, `\ud83d\u`, "é", "€", "😀", "\u2028", "\x7f", "\xff", "\x80", "\xc3",
	"\xe2\x82", "\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80", "\x01", "\x1f", "\t", "\n",
}

func (g *jsonGen) string() {
	g.buf = append(g.buf, '"')
	for range g.r.IntN(6) {
		if g.chance(3) {
			g.buf = append(g.buf, genPieces[g.r.IntN(5)]...) // plain
		} else if !g.chance(4) {
			g.buf = append(g.buf, genPieces[5+g.r.IntN(len(genPieces)-5)]...)
		}
	}
	if !g.chance(100) {
		g.buf = append(g.buf, '"')
	}
}

var genNumbers = []string{
	"0", "-0", "1", "7", "12", "24", "-5", "40000", "123456789012345678901234567890", "1.0", "-0.0", "0.001",
	"1e3", "1E3", "1e+3", "1e-3", "1.5e300", "1e400", "-1e400", "1e-400", "2.2250738585072014e-308",
	"1.7976931348623157e308", "1.7976931348623159e308", "01", "1.", "1e", "1e+", ".5", "+1", "-", "0x1",
	"1.e3", "-01", "00",
}

func (g *jsonGen) number() {
	if g.chance(2) {
		g.buf = strconv.AppendInt(g.buf, g.r.Int64N(2000)-1000, 10)
		return
	}
	g.buf = append(g.buf, g.pick(genNumbers)...)
}

// mutate now and then truncates the document, changes, drops or inserts a
// byte, or appends trailing data.
func (g *jsonGen) mutate() {
	if len(g.buf) == 0 || !g.chance(4) {
		return
	}
	at := g.r.IntN(len(g.buf))
	switch g.r.IntN(5) {
	case 0:
		g.buf = g.buf[:at]
	case 1:
		g.buf[at] = byte(g.r.IntN(256))
	case 2:
		g.buf = append(g.buf[:at], g.buf[at+1:]...)
	case 3:
		g.buf = append(g.buf[:at], append([]byte{g.pick([]string{`"`, `\`, "{", "[", ",", ":", "\x00", "\xff"})[0]}, g.buf[at:]...)...)
	default:
		g.buf = append(g.buf, g.pick([]string{" {}", "x", ",", " 1"})...)
	}
}

// TestDecodeRandomCoversOutcomes keeps the generator honest: its documents
// must reach values and each kind of failure.
func TestDecodeRandomCoversOutcomes(t *testing.T) {
	g := jsonGen{r: rand.New(rand.NewPCG(1, 2))}
	reasons := map[string]int{}
	for range 20000 {
		_, err := Decode(g.document())
		var de *DecodeError
		switch {
		case err == nil:
			reasons["ok"]++
		case errors.As(err, &de):
			reason := de.Reason
			if strings.HasPrefix(reason, "key ") {
				reason = "duplicate key"
			}
			if strings.HasPrefix(reason, "unexpected character") {
				reason = "unexpected character"
			}
			reasons[reason]++
		}
	}
	for _, want := range []string{
		"ok", "duplicate key", "unexpected character", "string is not valid UTF-8", "control character in string",
		"invalid escape", "invalid \\u escape", "unpaired surrogate in \\u escape", "unterminated string",
		"invalid number", "number does not fit a binary64 float", "invalid literal", "nesting deeper than 32 levels",
		"unexpected data after the JSON value", "expected a string object key", "expected ':' after an object key",
		"expected ',' or '}' in an object", "expected ',' or ']' in an array", "unterminated object",
		"unterminated array", "unexpected end of input",
	} {
		if reasons[want] < 5 {
			t.Errorf("generated documents rarely end with %q (%d times): %v", want, reasons[want], reasons)
		}
	}
}

// TestDecoderKeepsNoValues checks that a decoder, once done, holds nothing
// of the input or the decoded values that pooling it would keep alive.
func TestDecoderKeepsNoValues(t *testing.T) {
	for _, in := range []string{string(requestBody(t, 24)), `[{"a":[1,2,{"b":"c"}],"d":"e"},[3,{"f":[4,"g"]}]]`} {
		d := &decoder{data: []byte(in)}
		if _, err := d.document(); err != nil {
			t.Fatal(err)
		}
		checkNothingStacked(t, d) // popped as decoded
		broken := in[:len(in)-2]
		d = &decoder{data: []byte(broken)}
		if _, err := d.document(); err == nil {
			t.Fatalf("%q decoded", broken)
		}
		d.dropReferences()
		checkNothingStacked(t, d)
		if d.data != nil {
			t.Fatal("decoder keeps its input")
		}
	}
}

func checkNothingStacked(t *testing.T, d *decoder) {
	t.Helper()
	if cap(d.members) == 0 || cap(d.elems) == 0 {
		t.Fatal("test input stacks nothing")
	}
	for _, m := range d.members[:cap(d.members)] {
		if m != (member{}) {
			t.Fatalf("decoder keeps member %q", m.key)
		}
	}
	for _, e := range d.elems[:cap(d.elems)] {
		if e != nil {
			t.Fatalf("decoder keeps element %#v", e)
		}
	}
}
