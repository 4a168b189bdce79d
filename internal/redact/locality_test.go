package redact

import (
	"reflect"
	"strings"
	"testing"
)

// shifted returns ms moved by off bytes, nil for none.
func shifted(ms []Match, off int) []Match {
	var out []Match
	for _, m := range ms {
		m.Start += off
		m.End += off
		out = append(out, m)
	}
	return out
}

// findByLine is Find of s computed line by line.
func findByLine(s string) []Match {
	var out []Match
	off := 0
	for line := range strings.SplitSeq(s, "\n") {
		out = append(out, shifted(Find(line), off)...)
		off += len(line) + 1
	}
	return out
}

// checkLineLocal checks what Find's comment promises for a text without a
// private key block.
func checkLineLocal(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, pemStart) {
		return
	}
	if got, want := Find(s), findByLine(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("Find(%q) = %v, line by line %v", s, got, want)
	}
	for line := range strings.SplitSeq(s, "\n") {
		want := Find(line)
		if got := shifted(Find("  "+line), -2); !reflect.DeepEqual(got, want) {
			t.Fatalf("Find of %q indented = %v, not %v", line, got, want)
		}
		if trimmed, ok := strings.CutSuffix(line, "\r"); ok {
			if got := Find(trimmed); !reflect.DeepEqual(got, want) {
				t.Fatalf("Find of %q without its CR = %v, not %v", line, got, want)
			}
		}
	}
}

// localityInputs joins the reference inputs with every kind of line break,
// so secrets sit at line starts and ends.
func localityInputs() []string {
	ins := referenceInputs()
	out := append([]string(nil), ins...)
	// Constructs broken by a line feed where it would complete them.
	out = append(out, "password=\"abc\ndef\"", "password\n=hunter22", "token =\n abcdef123456",
		"the password is\nhunter2!", "the password\nis hunter2!", "密码是\nabc123", "postgres://u:p\n@h/", "a\n://b:c@d",
		"AKIA"+"IOSFODNN7EXAMPLE\nX", "\nsk-"+"proj-Xy7Qm2LkP9sVb3Nc8TzR4WdA1fGh6JkL\n")
	for _, sep := range []string{"\n", "\r\n", "\n  ", " \r\n\t", "\n\n\r"} {
		out = append(out, strings.Join(ins, sep))
	}
	return out
}

func TestFindIsLineLocal(t *testing.T) {
	for _, s := range localityInputs() {
		checkLineLocal(t, s)
	}
}

func TestAKeyBlockSpansLines(t *testing.T) {
	s := "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIE\nuser: next"
	if got, want := Find(s), findByLine(s); reflect.DeepEqual(got, want) {
		t.Fatalf("a key block found line by line: %v", got)
	}
}

func FuzzFindIsLineLocal(f *testing.F) {
	for _, in := range referenceInputs() {
		f.Add(in)
	}
	f.Add("token=abc123\r\npassword is AKIA" + "ABCDEFGHIJKLMNOP-x\n  eyJ")
	f.Fuzz(checkLineLocal)
}
