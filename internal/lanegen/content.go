package lanegen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// task is one unit of work a user asks for; it names the identifiers the
// episode talks about, so a summary can be checked for keeping them.
type task struct {
	Goal     string // imperative, without the final period
	File     string
	TestFile string
	Pkg      string
	Test     string
	Library  string
	Version  string
	URL      string
}

var tasks = []task{
	{"add retries with exponential backoff to the KV store client", "internal/store/kv.go", "internal/store/kv_test.go", "internal/store", "TestKVRetry", "github.com/cenkalti/backoff/v4", "v4.3.0", "https://pkg.go.dev/github.com/cenkalti/backoff/v4"},
	{"make the HTTP handler return 429 when the rate limiter rejects a request", "internal/api/handler.go", "internal/api/handler_test.go", "internal/api", "TestHandlerRateLimited", "golang.org/x/time/rate", "v0.16.0", "https://pkg.go.dev/golang.org/x/time/rate"},
	{"fix the race in the session cache eviction", "internal/cache/session.go", "internal/cache/session_test.go", "internal/cache", "TestSessionEvictRace", "sync", "go1.26", "https://go.dev/ref/mem"},
	{"stream query results instead of loading them into memory", "internal/db/query.go", "internal/db/query_test.go", "internal/db", "TestQueryStreamsRows", "github.com/jackc/pgx/v5", "v5.7.5", "https://github.com/jackc/pgx/wiki/Getting-started-with-pgx"},
	{"add a --dry-run flag to the migrate command", "cmd/migrate/main.go", "cmd/migrate/main_test.go", "cmd/migrate", "TestMigrateDryRun", "flag", "go1.26", "https://pkg.go.dev/flag"},
	{"publish order events to NATS JetStream with deduplication", "internal/events/publisher.go", "internal/events/publisher_test.go", "internal/events", "TestPublishDedupes", "github.com/nats-io/nats.go/jetstream", "v1.55.0", "https://docs.nats.io/using-nats/developer/develop_jetstream"},
	{"validate the YAML config and report every invalid field", "internal/config/config.go", "internal/config/config_test.go", "internal/config", "TestConfigValidate", "gopkg.in/yaml.v3", "v3.0.1", "https://pkg.go.dev/gopkg.in/yaml.v3"},
	{"add OpenTelemetry spans around the payment workflow", "internal/payments/workflow.go", "internal/payments/workflow_test.go", "internal/payments", "TestWorkflowSpans", "go.opentelemetry.io/otel", "v1.47.0", "https://opentelemetry.io/docs/languages/go/instrumentation/"},
	{"paginate the list-invoices endpoint with an opaque cursor", "internal/api/invoices.go", "internal/api/invoices_test.go", "internal/api", "TestListInvoicesCursor", "encoding/base64", "go1.26", "https://google.aip.dev/158"},
	{"replace the hand-written CSV export with encoding/csv", "internal/export/csv.go", "internal/export/csv_test.go", "internal/export", "TestExportQuotesFields", "encoding/csv", "go1.26", "https://pkg.go.dev/encoding/csv"},
	{"expose Prometheus metrics for queue depth", "internal/queue/metrics.go", "internal/queue/metrics_test.go", "internal/queue", "TestQueueDepthGauge", "github.com/prometheus/client_golang", "v1.25.0", "https://prometheus.io/docs/practices/naming/"},
	{"make the worker pool shut down gracefully on SIGTERM", "internal/worker/pool.go", "internal/worker/pool_test.go", "internal/worker", "TestPoolDrainsOnShutdown", "os/signal", "go1.26", "https://pkg.go.dev/os/signal#NotifyContext"},
}

var englishConstraints = []string{
	"The public API must stay backwards compatible.",
	"Never log request bodies, they contain customer data.",
	"Always run go vet ./... before you report back.",
	"Don't add new dependencies without asking me first.",
	"You must keep the tests hermetic: no network access.",
	"Do not touch the generated files under internal/gen/.",
	"Always keep error messages lowercase, as the linters require.",
	"Never use time.Sleep in tests; poll with a deadline instead.",
}

var chineseConstraints = []string{
	"必须保持 API 向后兼容，不要修改 go.mod。",
	"禁止在日志里打印用户数据。",
	"一定要先跑 go test ./... 再提交。",
	"不要删除已有的测试用例。",
}

var commands = []string{"go test ./...", "go vet ./...", "git diff", "git status --short", "go build ./...", "make lint"}

// vocabulary holds the finite pools a lane draws identifiers from, so that a
// long lane repeats identifiers the way a real repository does.
type vocabulary struct {
	commits []string
	issues  []int
}

func newVocabulary(rng *rand.Rand) vocabulary {
	v := vocabulary{}
	for range 24 {
		v.commits = append(v.commits, fmt.Sprintf("%07x", rng.Uint32()&0x0fffffff))
		v.issues = append(v.issues, 1000+rng.IntN(9000))
	}
	return v
}

func pick[T any](rng *rand.Rand, list []T) T { return list[rng.IntN(len(list))] }

func argsJSON(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	data, _ := json.Marshal(m) // a map of strings always marshals
	return string(data)
}

// episode appends one task: request, decision, investigation, a failing test
// most of the time, the fix, a passing run and a report.
func (b *builder) episode() {
	t := pick(b.rng, tasks)
	issue := pick(b.rng, b.vocab.issues)
	b.user(b.userRequest(t, issue))
	if b.rng.IntN(6) == 0 {
		b.supersede(t)
	}

	read := b.newCall("read_file", argsJSON("path", t.File))
	b.assistant(fmt.Sprintf("I'll use %s (%s) for this instead of a hand-written helper, because it is already vetted. Reading %s first.", t.Library, t.Version, t.File), read)
	b.toolResult(read, "success", b.fileContent(t))

	test := "go test ./" + t.Pkg + "/..."
	run := b.newCall("run_command", argsJSON("command", test))
	b.assistant(fmt.Sprintf("Decided to write %s in %s before changing the code, so the fix is proven. Running `%s`.", t.Test, t.TestFile, test), run)
	if b.rng.IntN(4) != 0 {
		b.toolResult(run, "error", b.failingTest(t))
		edit := b.newCall("edit_file", argsJSON("path", t.File, "patch", fmt.Sprintf("@@ -%d,7 +%d,9 @@ func retry", 40+b.rng.IntN(80), 40+b.rng.IntN(80))))
		b.assistant(fmt.Sprintf("The failure is an off-by-one in the attempt counter in %s. Fixing it.", t.File), edit)
		b.toolResult(edit, "success", fmt.Sprintf("applied patch to %s (+%d -%d)", t.File, 3+b.rng.IntN(20), 1+b.rng.IntN(6)))
		run = b.newCall("run_command", argsJSON("command", test))
		b.assistant(fmt.Sprintf("Re-running `%s`.", test), run)
	}
	b.toolResult(run, "success", b.passingTest(t))

	if b.rng.IntN(3) == 0 {
		cmd := pick(b.rng, commands)
		c := b.newCall("run_command", argsJSON("command", cmd))
		b.assistant(fmt.Sprintf("Checking the tree with `%s`.", cmd), c)
		b.toolResult(c, "success", b.commandOutput(cmd, t))
	}
	commit := pick(b.rng, b.vocab.commits)
	b.assistant(fmt.Sprintf("Done: %s. All tests in ./%s pass; committed as %s (refs #%d). See %s for the API I followed.", t.Goal, t.Pkg, commit, issue, t.URL))
}

func (b *builder) userRequest(t task, issue int) string {
	b.users++
	var s strings.Builder
	fmt.Fprintf(&s, "Please %s in %s (issue #%d).", t.Goal, t.File, issue)
	if b.rng.IntN(2) == 0 {
		fmt.Fprintf(&s, " %s", pick(b.rng, englishConstraints))
	}
	if b.o.ChineseEvery > 0 && b.users%b.o.ChineseEvery == 0 {
		fmt.Fprintf(&s, " %s", pick(b.rng, chineseConstraints))
	}
	if b.o.SecretEvery > 0 && b.users%b.o.SecretEvery == 0 {
		fmt.Fprintf(&s, " For the staging check use the key %s and never paste it anywhere.", b.secret())
	}
	if b.rng.IntN(3) == 0 {
		fmt.Fprintf(&s, " Context: this is for the %s rollout, tracked in https://github.com/acme/widget/issues/%d.", b.o.ThreadID, issue)
	}
	return s.String()
}

// supersede has the user change course before the assistant starts.
func (b *builder) supersede(t task) {
	b.users++
	b.user(fmt.Sprintf("Actually, scratch that: keep the change inside %s only and leave the callers alone.", t.File))
}

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (b *builder) secret() string {
	key := make([]byte, 40)
	for i := range key {
		key[i] = keyAlphabet[b.rng.IntN(len(keyAlphabet))]
	}
	return "sk-proj-" + string(key)
}

// fileContent is a plausible Go source file; every LargeToolEvery-th tool
// result is padded past the projection threshold.
func (b *builder) fileContent(t task) string {
	pkg := t.Pkg[strings.LastIndex(t.Pkg, "/")+1:]
	var s strings.Builder
	fmt.Fprintf(&s, "package %s\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\n\t\"%s\"\n)\n\n", pkg, t.Library)
	fmt.Fprintf(&s, "// Client talks to the backing service.\ntype Client struct {\n\tattempts int\n}\n\n")
	funcs := 2
	if b.wantLarge() {
		funcs = 30 + b.rng.IntN(40)
	}
	for i := range funcs {
		fmt.Fprintf(&s, "// Op%d performs step %d of the workflow.\nfunc (c *Client) Op%d(ctx context.Context, key string) error {\n\tif err := ctx.Err(); err != nil {\n\t\treturn fmt.Errorf(\"op%d %%s: %%w\", key, err)\n\t}\n\tc.attempts++\n\treturn nil\n}\n\n", i, i, i, i)
	}
	return s.String()
}

func (b *builder) failingTest(t task) string {
	var s strings.Builder
	fmt.Fprintf(&s, "=== RUN   %s\n", t.Test)
	if b.wantLarge() {
		for i := range 60 + b.rng.IntN(60) {
			fmt.Fprintf(&s, "    %s:%d: attempt %d: backend returned 503 Service Unavailable, retrying\n", baseName(t.TestFile), 30+i%40, i)
		}
	}
	fmt.Fprintf(&s, "    %s:%d: got 2 attempts, want 3\n--- FAIL: %s (0.0%ds)\nFAIL\nFAIL\tgithub.com/acme/widget/%s\t0.%03ds\nFAIL\n",
		baseName(t.TestFile), 40+b.rng.IntN(60), t.Test, 1+b.rng.IntN(9), t.Pkg, 10+b.rng.IntN(900))
	return s.String()
}

func (b *builder) passingTest(t task) string {
	if b.wantLarge() {
		var s strings.Builder
		for i := range 80 + b.rng.IntN(80) {
			fmt.Fprintf(&s, "=== RUN   %s/case_%03d\n--- PASS: %s/case_%03d (0.00s)\n", t.Test, i, t.Test, i)
		}
		fmt.Fprintf(&s, "ok  \tgithub.com/acme/widget/%s\t0.%03ds\n", t.Pkg, 10+b.rng.IntN(900))
		return s.String()
	}
	return fmt.Sprintf("ok  \tgithub.com/acme/widget/%s\t0.%03ds", t.Pkg, 10+b.rng.IntN(900))
}

func (b *builder) commandOutput(cmd string, t task) string {
	switch cmd {
	case "git diff":
		var s strings.Builder
		fmt.Fprintf(&s, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", t.File, t.File, t.File, t.File)
		lines := 6
		if b.wantLarge() {
			lines = 120 + b.rng.IntN(80)
		}
		for i := range lines {
			fmt.Fprintf(&s, "+\tc.attempts = min(c.attempts+%d, maxAttempts) // step %d\n", i%3+1, i)
		}
		return s.String()
	case "git status --short":
		return fmt.Sprintf(" M %s\n M %s\n", t.File, t.TestFile)
	}
	if b.wantLarge() {
		return strings.Repeat(fmt.Sprintf("%s: checked ./%s/...\n", cmd, t.Pkg), 80)
	}
	return ""
}

func baseName(path string) string { return path[strings.LastIndex(path, "/")+1:] }
