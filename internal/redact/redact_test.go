package redact

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Fixtures are assembled at run time so no literal in the repository looks
// like a live credential to a scanner.
var (
	openAIKey    = "sk-" + "proj-" + "Xy7Qm2LkP9sVb3Nc8TzR4WdA1fGh6JkL"
	openAIOld    = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
	anthropicKey = "sk-" + "ant-api03-" + "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7A-aBcDeF"
	awsKey       = "AKIA" + "IOSFODNN7EXAMPLE"
	awsTempKey   = "ASIA" + "Y34FZKBOKMUTVV7A"
	githubToken  = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
	githubPAT    = "github_pat_" + "11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789"
	slackToken   = "xoxb-" + "2934857102-4958671234567-AbCdEfGhIjKlMnOpQrStUvWx"
	jwtToken     = "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemKey       = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yQ8cN1pG7wYw==\n-----END RSA PRIVATE KEY-----"
)

func TestFindPositives(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		class  string
		secret string // the exact text that must be masked
	}{
		{"openai project key", "export OPENAI_API_KEY " + openAIKey + " now", ClassOpenAIKey, openAIKey},
		{"openai legacy key", "use " + openAIOld, ClassOpenAIKey, openAIOld},
		{"anthropic key", "key " + anthropicKey + ".", ClassAnthropicKey, anthropicKey},
		{"aws access key", "aws id " + awsKey + " in prod", ClassAWSAccessKey, awsKey},
		{"aws temporary key", "(" + awsTempKey + ")", ClassAWSAccessKey, awsTempKey},
		{"github classic token", "GH " + githubToken, ClassGitHubToken, githubToken},
		{"github fine-grained token", githubPAT + " is mine", ClassGitHubToken, githubPAT},
		{"github oauth token", "gho_" + strings.Repeat("Ab1", 12), ClassGitHubToken, "gho_" + strings.Repeat("Ab1", 12)},
		{"slack bot token", "slack: " + slackToken, ClassSlackToken, slackToken},
		{"slack user token", "xoxp-" + "1234567890-abcdefghij", ClassSlackToken, "xoxp-" + "1234567890-abcdefghij"},
		{"jwt", "Authorization: Bearer " + jwtToken, ClassJWT, jwtToken},
		{"pem block", "key:\n" + pemKey + "\nthanks", ClassPrivateKey, pemKey},
		{"unterminated pem block", "cut: " + pemKey[:90], ClassPrivateKey, pemKey[:90]},
		{"url password", "dsn postgres://admin:s3cr3t-Pa55@db.internal:5432/app", ClassURLPassword, "s3cr3t-Pa55"},
		{"url password with at sign", "https://bob:p@ss@example.com/x", ClassURLPassword, "p@ss"},
		{"password equals", "login with password=hunter22 please", ClassPasswordAssignment, "hunter22"},
		{"password spaced equals", "DB_PASSWORD = Tr0ub4dor", ClassPasswordAssignment, "Tr0ub4dor"},
		{"password colon", "password: correcthorse", ClassPasswordAssignment, "correcthorse"},
		{"json password", `{"password": "p4ss word!"}`, ClassPasswordAssignment, "p4ss word!"},
		{"single-quoted secret", "client_secret='abcdef123456'", ClassPasswordAssignment, "abcdef123456"},
		{"token equals", "curl ...?token=9f8e7d6c5b&x=1", ClassPasswordAssignment, "9f8e7d6c5b"},
		{"api key colon", "api_key: a1b2c3d4e5f6", ClassPasswordAssignment, "a1b2c3d4e5f6"},
		{"apikey upper", "APIKEY=ZXCVBNM123", ClassPasswordAssignment, "ZXCVBNM123"},
		{"passwd", "passwd=letmein", ClassPasswordAssignment, "letmein"},
		{"password is", "the admin password is hunter2-Admin! ok", ClassPasswordAssignment, "hunter2-Admin!"},
		{"passcode was quoted", `the passcode was "4 4 7 1"`, ClassPasswordAssignment, "4 4 7 1"},
		{"chinese password is", "我的密码是hunter2，别告诉别人", ClassPasswordAssignment, "hunter2"},
		{"chinese password colon", "数据库密码：Abc123456 谢谢", ClassPasswordAssignment, "Abc123456"},
		{"chinese password ascii colon", "密码: qwerty99", ClassPasswordAssignment, "qwerty99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := Find(tt.in)
			if len(ms) != 1 {
				t.Fatalf("Find(%q) = %v, want one match", tt.in, ms)
			}
			m := ms[0]
			if m.Class != tt.class || tt.in[m.Start:m.End] != tt.secret {
				t.Fatalf("Find(%q) = %s %q, want %s %q", tt.in, m.Class, tt.in[m.Start:m.End], tt.class, tt.secret)
			}
			out, classes := String(tt.in)
			if strings.Contains(out, tt.secret) {
				t.Fatalf("String(%q) = %q still holds the secret", tt.in, out)
			}
			if !strings.Contains(out, "[REDACTED:"+tt.class+"]") || !reflect.DeepEqual(classes, []string{tt.class}) {
				t.Fatalf("String(%q) = %q, %v", tt.in, out, classes)
			}
			if !Contains(tt.in) {
				t.Fatalf("Contains(%q) = false", tt.in)
			}
		})
	}
}

func TestFindNegatives(t *testing.T) {
	tests := []struct{ name, in string }{
		{"token in prose", "The token limit is 8000 and each token costs money."},
		{"token colon prose", "One thing about the token: it expires."},
		{"max tokens setting", "max_tokens=4096, input_token=1200"},
		{"short sk", "the sk-abc123 prefix is not a key"},
		{"sk in word", "task-oriented and risk-averse"},
		{"two-segment jwt-like", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"},
		{"jwt-like short segments", "eyJhb.eyJz.abc"},
		{"empty password", "password=\nnext line"},
		{"empty quoted password", `password="" and secret=''`},
		{"password placeholder", "password=${DB_PASSWORD} and token=<your-token> and secret=*****"},
		{"url without password", "see https://user@example.com/path and https://example.com:8443/x"},
		{"plain url", "https://github.com/cairnhq/cairn/blob/main/README.md"},
		{"git sha", "commit 3497bb8f0c2d9e1a4b5c6d7e8f9a0b1c2d3e4f5a fixed it"},
		{"uuid", "request 123e4567-e89b-12d3-a456-426614174000 done"},
		{"aws-like lower", "akiaiosfodnn7example is lowercase"},
		{"aws-like short", "AKIA1234 is too short"},
		{"github-like short", "ghp_short and gho_1234"},
		{"slack-like short", "xoxb-123"},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"},
		{"password is prose", "The password is required. Your password was reset."},
		{"pwd directory", "PWD=/home/user/project"},
		{"chinese prose", "请记住密码学很难，这是一个提醒。"},
		{"existing marker", "password=[REDACTED:password_assignment] and [REDACTED:jwt]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ms := Find(tt.in); len(ms) != 0 {
				var got []string
				for _, m := range ms {
					got = append(got, fmt.Sprintf("%s %q", m.Class, tt.in[m.Start:m.End]))
				}
				t.Fatalf("Find(%q) = %v, want none", tt.in, got)
			}
			if out, classes := String(tt.in); out != tt.in || classes != nil {
				t.Fatalf("String(%q) = %q, %v; want unchanged", tt.in, out, classes)
			}
		})
	}
}

func TestStringManySecrets(t *testing.T) {
	in := "a " + openAIKey + " b " + awsKey + " c " + openAIOld + " d password=hunter22"
	out, classes := String(in)
	want := "a [REDACTED:openai_api_key] b [REDACTED:aws_access_key] c [REDACTED:openai_api_key] d password=[REDACTED:password_assignment]"
	if out != want {
		t.Fatalf("String = %q\nwant     %q", out, want)
	}
	if !reflect.DeepEqual(classes, []string{ClassOpenAIKey, ClassAWSAccessKey, ClassPasswordAssignment}) {
		t.Fatalf("classes = %v", classes)
	}
	ms := Find(in)
	for i := 1; i < len(ms); i++ {
		if ms[i].Start < ms[i-1].End {
			t.Fatalf("matches overlap or are out of order: %v", ms)
		}
	}
}

func TestOverlapIsMerged(t *testing.T) {
	// The assignment's value is itself a JWT: one range, one marker.
	in := "token=" + jwtToken
	ms := Find(in)
	if len(ms) != 1 || ms[0].Start != len("token=") || ms[0].End != len(in) {
		t.Fatalf("Find = %v", ms)
	}
	if out, _ := String(in); strings.Contains(out, "eyJ") {
		t.Fatalf("String = %q", out)
	}
}

func TestOnly(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{openAIKey, true},
		{"  " + awsKey + ", " + githubToken + "!", true},
		{pemKey, true},
		{"my key is " + openAIKey, false},
		{"password=hunter22", false},
		{"", false},
		{"...", false},
		{"just prose", false},
	}
	for _, tt := range tests {
		if got := Only(tt.in); got != tt.want {
			t.Errorf("Only(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestIdempotent(t *testing.T) {
	in := "password=x" + jwtToken + " url https://a:" + openAIKey + "@h/ " + pemKey
	once, _ := String(in)
	twice, classes := String(once)
	if once != twice || classes != nil {
		t.Fatalf("String not idempotent:\n%q\n%q %v", once, twice, classes)
	}
}

func FuzzString(f *testing.F) {
	seeds := []string{
		"", "hello", openAIKey, anthropicKey, awsKey, githubToken, githubPAT, slackToken, jwtToken, pemKey,
		"postgres://u:p@h/db", "password=hunter22", `"token": "abcdef123"`, "密码是abc123",
		"password=[REDACTED:jwt]x", "sk-ant-" + openAIKey, "token=" + jwtToken + awsKey,
		"-----BEGIN PRIVATE KEY-----\n[REDACTED:jwt]\n-----END PRIVATE KEY-----",
		// A marker's own characters must not make a value look like a
		// password on the second pass.
		"the password is AKIA" + "ABCDEFGHIJKLMNOP-x", "token: [REDACTED:jwt]", "the password is [REDACTED:jwt]-x",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms := Find(s)
		for i, m := range ms {
			if m.Start < 0 || m.End > len(s) || m.Start >= m.End || (i > 0 && m.Start < ms[i-1].End) {
				t.Fatalf("bad matches %v for %q", ms, s)
			}
		}
		out, classes := String(s)
		if len(classes) > 0 != (len(ms) > 0) {
			t.Fatalf("classes %v but matches %v", classes, ms)
		}
		if Contains(out) {
			t.Fatalf("String(%q) = %q still holds a secret: %v", s, out, Find(out))
		}
		again, _ := String(out)
		if again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
	})
}

func BenchmarkString(b *testing.B) {
	var sb strings.Builder
	parts := []string{
		"The deploy finished; remember to rotate keys every quarter. ",
		"Token usage was 1200 tokens for this step, see https://example.com/docs. ",
		"我们约定以后所有的服务都用 UTF-8 编码。 ",
		"commit 3497bb8f0c2d9e1a4b5c6d7e8f9a0b1c2d3e4f5a ",
		"password=hunter22 ",
		openAIKey + " ",
	}
	for i := 0; sb.Len() < 100<<10; i++ {
		sb.WriteString(parts[i%len(parts)])
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		String(text)
	}
}

// TestAdversarialInputStaysLinear guards against inputs that would make a
// detector rescan the rest of the text at every anchor (quadratic time). It
// compares each input with one a quarter of its size in the same run, so a
// slow or busy machine does not fail it: linear work grows about 4x,
// quadratic about 16x.
func TestAdversarialInputStaysLinear(t *testing.T) {
	units := map[string]int{
		"-----BEGIN RSA PRIVATE KEY-----!":                           3000,
		"-----BEGIN RSA PRIVATE KEY-----\n-----END PUBLIC KEY-----!": 2000,
		"password=":      10000,
		"password is ":   8000,
		"a://b:":         15000,
		"eyJaaaaaaaaaa.": 7000,
		"token":          20000,
		"password":       12000,
	}
	for unit, n := range units {
		// Four times the input takes about four times as long when the
		// work is linear and sixteen when it is quadratic; the bound between
		// leaves room for a loaded machine, and the fastest of five runs
		// drops most of its noise. Quadratic work exceeds the bound every
		// time, so a ratio over it is measured again, up to three times in
		// all, before it fails: a burst of load (other test packages run
		// beside this one) seldom lasts through three.
		var ratios []float64
		for range 3 {
			small := fastestOf(5, func() { String(strings.Repeat(unit, n/8)) })
			large := fastestOf(5, func() { String(strings.Repeat(unit, n/2)) })
			ratios = append(ratios, float64(large)/float64(small))
			if ratios[len(ratios)-1] <= 12 {
				break
			}
		}
		if slices.Min(ratios) > 12 {
			t.Errorf("%q x %d took %.1fx the time of a quarter of it, in each of %d measurements (%.1f)", unit, n/2, slices.Min(ratios), len(ratios), ratios)
		}
	}
}

// fastestOf returns the shortest of n runs of f.
func fastestOf(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

func TestLongValuesAreMaskedWhole(t *testing.T) {
	for _, in := range []string{
		"token=" + strings.Repeat("0", 300),
		`password="` + strings.Repeat("p", 300) + `"`,
		"ghp_" + strings.Repeat("A", 300),
		"https://u:" + strings.Repeat("p", 300) + "@h/",
	} {
		// Each output is its marker plus a few bytes of context: no tail of
		// the value is left behind.
		out, _ := String(in)
		if again, _ := String(out); again != out || len(out) > 60 {
			t.Errorf("String(%.20q...) = %q", in, out)
		}
	}
}

// BenchmarkFindChat scans a coding assistant's lane: code, logs, JSON and
// prose with a secret every kilobyte or so, where most of the time goes to
// skipping text no anchor starts in.
func BenchmarkFindChat(b *testing.B) {
	parts := []string{
		"I looked at the failing job. The migration step tries to write to the staging database, which is read-only. ",
		"func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {\n\treturn s.kv.Get(ctx, key)\n}\n",
		"--- FAIL: TestMigrate (0.42s)\n    migrate_test.go:31: pq: permission denied for table users\n",
		`{"status":"ok","items":[{"id":1,"name":"alpha"}],"next":"https://api.example.com/v1/items?page=2"} `,
		"The token budget for this step was 1200 tokens. 我已经更新了文档。 ",
		"internal/store/kv.go:42:\tif err := s.kv.Put(ctx, key, value); err != nil {\n",
		"export DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/app\n",
		"ok, my key is " + openAIKey + " for now.\n",
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 20<<10; i++ {
		sb.WriteString(parts[i%len(parts)])
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Find(text)
	}
}
