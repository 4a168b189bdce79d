package redact

import (
	"reflect"
	"strings"
	"testing"
)

// findReference is Find as first written: one strings.Index pass per
// anchor, folding detectors searching a lower-cased copy, each detector's
// regexp run at every anchor over all the text after it, and markers found
// by their regexp. Find must find exactly what it finds.
func findReference(s string) []Match {
	found := scanPEM(nil, s)
	var lower string
	for i, d := range detectors {
		text := s
		if d.fold {
			if lower == "" {
				lower = referenceLower(s)
			}
			text = lower
		}
		for _, a := range d.anchors {
			for from := 0; from < len(text); {
				j := strings.Index(text[from:], a)
				if j < 0 {
					break
				}
				at := from + j
				from = at + 1
				var end int
				found, end = d.matchAt(found, s, at, i)
				from = max(from, end)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	return merge(dropMarkers(found, marker.FindAllStringIndex(s, -1)))
}

func referenceLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// referenceInputs mixes every anchor in both cases, near misses, word
// boundaries, overlapping and repeated secrets, and non-ASCII text.
func referenceInputs() []string {
	secrets := []string{openAIKey, openAIOld, anthropicKey, awsKey, awsTempKey, githubToken, githubPAT, slackToken, jwtToken, pemKey}
	ins := []string{
		"", "g", "gh", "sk-", "xsk-" + openAIKey[3:], "PASSWORD=hunter22", "PassWord: Tr0ub4dor", "Api_Key=ZXCVBNM123",
		"TOKEN=9f8e7d6c5b", "SeCrEt='abcdef123456'", "pwd=/home/u", "PWD=letmein", "the Password Is hunter2-Admin!",
		"postgres://admin:s3cr3t@db/x and HTTPS://u:p4ss@h/", "密码是hunter2，密码：Abc123456", "token=[REDACTED:jwt]",
		"password=password=password=abc123", "eyJaaaaaaaaaa.eyJbbbbbbbbbb.cccccccccc", "ghp_ghp_" + strings.Repeat("a", 40),
		"night through high ghost sk8 AKIAshort ASIA passes apis tokens secrets",
		// Edges of the quick tests run before a detector's regexp.
		"a://u::@h", "a://u:@@h", "a://u:@h", "a://:p@h", "a://u:p/@h", "a://u:p @h", "a://u", "a://u:", "http://localhost:8080/x",
		"api_\u212aey=abcdef123", "api-key =\tabc123456", `token"  = abc123456`, "token'=abcdef1", "token_x=abcdef123",
		"password\t is hunter2!", "passwordis hunter2!", "password:", "token", "password", "passcode was 4471!", "secret \"=x",
	}
	for _, sec := range secrets {
		ins = append(ins, sec, "x"+sec, "("+sec+")", sec+sec, strings.ToUpper(sec), "password="+sec, "a://b:"+sec+"@c")
	}
	var all strings.Builder
	for _, in := range ins {
		all.WriteString(in)
		all.WriteString(" \n")
	}
	return append(ins, all.String())
}

func TestFindMatchesReference(t *testing.T) {
	for _, in := range referenceInputs() {
		if got, want := Find(in), findReference(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Find(%.80q) = %v, reference %v", in, got, want)
		}
	}
}

func FuzzFindMatchesReference(f *testing.F) {
	for _, in := range referenceInputs() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Find(s), findReference(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("Find(%q) = %v, reference %v", s, got, want)
		}
	})
}

// markerInputs holds markers whole, cut, nested, too long and back to back.
func markerInputs() []string {
	return []string{
		"", "[REDACTED:", "[REDACTED:]", "[REDACTED:a]", "[REDACTED:A]", "[REDACTED:a-b]", "[REDACTED:jwt]x[REDACTED:jwt]",
		"[REDACTED:[REDACTED:jwt]]", "[[REDACTED:jwt]", "[REDACTED:" + strings.Repeat("a", 40) + "]",
		"[REDACTED:" + strings.Repeat("a", 41) + "]", "[REDACTED:jwt][REDACTED:url_password]", "[REDACTED:jwt",
		"x [REDACTED:password_assignment] y [REDACTED:open", "[REDACTED:记]",
	}
}

func TestMarkerSpansMatchRegexp(t *testing.T) {
	for _, s := range append(markerInputs(), referenceInputs()...) {
		if got, want := markerSpans(s), marker.FindAllStringIndex(s, -1); !reflect.DeepEqual(got, want) {
			t.Errorf("markerSpans(%q) = %v, regexp %v", s, got, want)
		}
	}
}

func FuzzMarkerSpansMatchRegexp(f *testing.F) {
	for _, s := range markerInputs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := markerSpans(s), marker.FindAllStringIndex(s, -1); !reflect.DeepEqual(got, want) {
			t.Fatalf("markerSpans(%q) = %v, regexp %v", s, got, want)
		}
	})
}
