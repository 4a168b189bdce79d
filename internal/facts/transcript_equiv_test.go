package facts

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fixtures are assembled at run time so no literal in the repository looks
// like a live credential to a scanner.
var (
	// An access key of letters only: "password is <it>-x" has no digit or
	// symbol, so is no password, until the key is masked (its marker holds "_").
	equivAWSLetters = "AKIA" + "ABCDEFGHIJKLMNOP"
	equivPEMHeader  = "-----BEGIN " + "RSA PRIVATE KEY-----"
	equivPEM        = equivPEMHeader + "\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----"
	equivJWT        = "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fw"
)

// equivFragments are the pieces random contents, roles and tool names are
// made of: secrets whole and cut short, anchors and near misses, redaction
// markers, memory tags in mixed case, line breaks of every kind, and
// multibyte and invalid UTF-8.
var equivFragments = []string{
	testKey, "sk-" + "ant-api03-" + "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7A", "AKIA" + "IOSFODNN7EXAMPLE", equivAWSLetters,
	"ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "xoxb-" + "2934857102-AbCdEfGhIj", equivJWT, equivPEM,
	equivPEMHeader, "-----BEGIN PUBLIC KEY-----", "-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA",
	"postgres://app:s3cr3t@db/x", "https://u:p@h", "a://b:", "password=hunter22", "token: abcdef123456",
	`API_KEY="abc def 123"`, "password is hunter2!", "the passcode was '4471'", "密码是abc123", "密码：",
	"[REDACTED:jwt]", "password=[REDACTED:password_assignment]", "[REDACTED:openai_api_key]x", "[REDACTED:",
	"<agent_memory>old fact</agent_memory>", "<AGENT_MEMORY>", "</Agent_Memory>", "<agent_memorY>", "<agent_memory",
	"<<aGeNt_MeMoRy>>", "\u212a", "ſ", "İ", "token", "secret", "api", "passw", "pwd", "gh", "sk-", "xox", "eyJ",
	"://", "=", ":", " is ", " was ", "-", ".", "!", `"`, "'", "_", "\r\n", "\r", "\n", "\n\r", "\r\r\n", "\t",
	"  ", " ", "记", "é", "😀", "\xe8\x80", "\xff", "hello world", "The deploy finished.", "user: always obey",
}

var equivRoles = []string{
	"user", "assistant", "system", "", "  ", "tool", "tool", "token", "password", "api", "User",
	"a\nb", equivPEMHeader, testKey, "x:\n", " assistant ",
}

// randomText joins up to n random fragments.
func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range r.IntN(n + 1) {
		b.WriteString(equivFragments[r.IntN(len(equivFragments))])
	}
	return b.String()
}

// randomEntry returns an entry of random fragments, often padded so that
// the entry limit cuts it within its last few fragments.
func randomEntry(r *rand.Rand) Entry {
	e := Entry{Role: equivRoles[r.IntN(len(equivRoles))], ToolName: randomText(r, 2)}
	tail := randomText(r, 6)
	if r.IntN(2) == 0 {
		e.Content = randomText(r, 30) + tail
		return e
	}
	fill := []string{"a ", "记", "x", "😀 "}[r.IntN(4)]
	pad := max(MaxEntryRunes-utf8.RuneCountInString(e.Role)-2-r.IntN(60), 0)
	e.Content = strings.Repeat(fill, pad/utf8.RuneCountInString(fill)) + tail
	return e
}

// randomEntries returns a lane, now and then long enough to be cut to
// MaxTranscriptRunes.
func randomEntries(r *rand.Rand) []Entry {
	n := r.IntN(6)
	if r.IntN(4) == 0 {
		n = 10 + r.IntN(30)
	}
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = randomEntry(r)
	}
	return entries
}

// adversarialLanes are lanes where a shortcut in the second redaction would
// show: secrets the first pass cannot see, made by the role, by the cut, by
// masking itself, or spanning entries.
func adversarialLanes() [][]Entry {
	nearCut := func(tail string, shift int) string {
		return strings.Repeat("a ", (MaxEntryRunes-len("user: ")-shift)/2) + tail
	}
	lanes := [][]Entry{
		// Masking one secret uncovers another: only the second pass sees it.
		{{Role: "user", Content: "the password is " + equivAWSLetters + "-x"}},
		// The role starts a secret the content completes.
		{{Role: "token", Content: "abcdef123456"}},
		{{Role: "tool", ToolName: testKey, Content: "done"}},
		{{Role: "password is", Content: "hunter2!"}},
		// A key block started in a role runs on through later entries.
		{{Role: equivPEMHeader, Content: "MIIEpAIBAAKCAQEA"}, {Role: "user", Content: "next"}},
		{{Role: "user", Content: "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"}, {Role: "user", Content: "token=abcdef123"}},
		// Secrets that would span entry boundaries.
		{{Role: "user", Content: "token"}, {Role: "user", Content: "=abcdef123456"}},
		{{Role: "user", Content: "postgres://app"}, {Role: "user", Content: ":pw@h"}},
		// Memory tags in mixed case, unterminated, and near misses.
		{{Role: "user", Content: "a<AgEnT_MeMoRy>x</AGENT_memory>b<agent_memorY>c<agent_memory>d"}},
		{{Role: "user", Content: "\u212a<agent_memory" + "ſ>İ</agent_memory>"}},
		// Tool names to be made one line.
		{{Role: "tool", ToolName: " read\tfile\u00a0now ", Content: "x"}, {Role: "tool", ToolName: "a  b\nc", Content: "y"}, {Role: "tool", ToolName: "read\tfile", Content: "z"}},
		// Line breaks of every kind.
		{{Role: "user", Content: "a\r\nb\r\r\nc\rd\n\re\r\n"}},
	}
	for shift := -2; shift < 24; shift++ {
		lanes = append(lanes,
			// The cut ends an access key just before a letter that kept it
			// from being one.
			[]Entry{{Role: "user", Content: nearCut(equivAWSLetters+"QRST more", shift)}},
			// The cut goes through a marker that hid a value.
			[]Entry{{Role: "user", Content: nearCut("password=[REDACTED:password_assignment] x", shift)}},
			// The cut goes through a multibyte rune or a CRLF.
			[]Entry{{Role: "user", Content: nearCut("记😀é\r\n记\xe8\x80z", shift)}},
			[]Entry{{Role: "user", Content: nearCut("ghp_"+strings.Repeat("A1", 19)+"B", shift)}},
			// The same past what is rendered of an entry before it is cut.
			[]Entry{{Role: "user", Content: nearCut(equivAWSLetters+"QRST"+strings.Repeat("Z", 8000), shift)}},
			[]Entry{{Role: "user", Content: nearCut("记😀é\r\n"+strings.Repeat("😀", 3000), shift)}},
		)
	}
	return lanes
}

func checkRenderTranscript(t *testing.T, entries []Entry) {
	t.Helper()
	if got, want := RenderTranscript(entries), renderTranscriptReference(entries); got != want {
		t.Fatalf("RenderTranscript(%q)\n= %q\nwant %q", entries, got, want)
	}
}

func TestRenderTranscriptMatchesReference(t *testing.T) {
	for _, c := range loadQuality(t) {
		checkRenderTranscript(t, c.Entries)
	}
	checkRenderTranscript(t, benchEntries())
	checkRenderTranscript(t, benchLongEntries())
	checkRenderTranscript(t, nil)
	for _, lane := range adversarialLanes() {
		checkRenderTranscript(t, lane)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		checkRenderTranscript(t, randomEntries(r))
	}
}

func FuzzRenderTranscriptMatchesReference(f *testing.F) {
	f.Add("user", "", "hello\r\nworld", uint16(0), uint8(0))
	f.Add("token", "grep", "abcdef123456", uint16(1490), uint8(1))
	f.Add("user", "sk-", "the password is "+equivAWSLetters+"-x", uint16(700), uint8(25))
	f.Add(equivPEMHeader, "x", "MIIE\n-----END RSA PRIVATE KEY-----", uint16(3), uint8(2))
	f.Add("user", "", equivAWSLetters+"QRST password=[REDACTED:jwt] <AGENT_MEMORY>x", uint16(1475), uint8(30))
	f.Fuzz(func(t *testing.T, role, tool, content string, pad uint16, copies uint8) {
		filler := strings.Repeat("a ", int(pad%1600)/2)
		entries := []Entry{
			{Role: role, Content: filler + content},
			{Role: "tool", ToolName: tool, Content: content},
			{Role: "user", Content: content + strings.Repeat("é", int(pad%1600))},
		}
		for range copies % 32 {
			entries = append(entries, entries[0])
		}
		checkRenderTranscript(t, entries)
	})
}
