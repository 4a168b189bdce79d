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

// checkLineLocal checks what Find's comment promises for a text for which
// LineLocal holds.
func checkLineLocal(t *testing.T, s string) {
	t.Helper()
	if !LineLocal(s) {
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

// checkPrefix checks what MayStartSecret's comment promises for p + " ".
func checkPrefix(t *testing.T, p, s string) {
	t.Helper()
	p += " "
	if MayStartSecret(p) {
		return
	}
	if got, want := Find(p+s), shifted(Find(s), len(p)); !reflect.DeepEqual(got, want) {
		t.Fatalf("Find(%q + %q) = %v, want %v", p, s, got, want)
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

func TestLineLocal(t *testing.T) {
	if LineLocal("-----BEGIN PUBLIC KEY-----") || LineLocal("a\n-----BEGIN") || !LineLocal("-----END RSA PRIVATE KEY-----\nBEGIN") {
		t.Fatal("LineLocal must be false exactly where a key block may start")
	}
	// The one construct that does span lines.
	s := "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIE\nuser: next"
	if got, want := Find(s), findByLine(s); reflect.DeepEqual(got, want) {
		t.Fatalf("a key block found line by line: %v", got)
	}
}

func TestMayStartSecret(t *testing.T) {
	for _, d := range detectors {
		for _, a := range d.anchors {
			cased := []string{a}
			if d.fold {
				cased = append(cased, strings.ToUpper(a), strings.ToUpper(a[:1])+a[1:])
			}
			for _, c := range cased {
				if !MayStartSecret("x" + c + "x") {
					t.Errorf("MayStartSecret(%q) = false", "x"+c+"x")
				}
			}
		}
	}
	for _, s := range []string{"-----BEGIN", "tool(a://b): "} {
		if !MayStartSecret(s) {
			t.Errorf("MayStartSecret(%q) = false", s)
		}
	}
	for _, s := range []string{"", "user: ", "assistant: ", "system: ", "unknown: ", "tool(grep): ", "tool(read_file): ", "tool(bash): "} {
		if MayStartSecret(s) {
			t.Errorf("MayStartSecret(%q) = true", s)
		}
	}
}

func TestMayStartSecretPrefixAddsNothing(t *testing.T) {
	prefixes := []string{"user:", "tool(grep):", "a\nb:", "x=", "https", "postgres:", "pass", "to", "s", "k-", "[REDACTED:", "-----", "\xe5\xaf", "token:", "password is", "api_key ="}
	for _, s := range localityInputs() {
		for _, p := range prefixes {
			checkPrefix(t, p, s)
		}
	}
}

func FuzzFindIsLineLocal(f *testing.F) {
	for _, in := range referenceInputs() {
		f.Add(in)
	}
	f.Add("token=abc123\r\npassword is AKIA" + "ABCDEFGHIJKLMNOP-x\n  eyJ")
	f.Fuzz(checkLineLocal)
}

func FuzzMayStartSecretPrefixAddsNothing(f *testing.F) {
	f.Add("user:", "token=abcdef123")
	f.Add("https", "://u:p@h")
	f.Add("pass", "word=hunter22")
	f.Add("tool(x)", "[REDACTED:jwt]")
	f.Add("token:", "abcdef123456")
	f.Fuzz(checkPrefix)
}
