package facts

import (
	"fmt"
	"strings"
	"testing"
)

// benchEntries returns a lane of 24 chat and tool entries of about 20 KB in
// all, in the proportions a coding assistant's lane has: short user turns,
// longer assistant replies, and tool output (files, logs, JSON), with a
// secret, a CRLF log and some non-ASCII text among them.
func benchEntries() []Entry {
	user := []string{
		"The integration tests fail on CI but pass locally, can you look at the logs?",
		"We always use pnpm in this repo, never npm. Also the staging database is read-only.",
		"以后提交代码之前必须先运行 make lint 检查一下，谢谢。",
		"ok, and remember the deploy key lives in vault, not in the repo",
	}
	assistant := []string{
		"I looked at the failing job. The migration step tries to write to the staging " +
			"database, which is read-only, so `ALTER TABLE` fails with permission denied. " +
			"I will switch the test to a throwaway schema and keep staging untouched.\n\n" +
			"```go\nfunc TestMigrate(t *testing.T) {\n\tdb := testdb.New(t)\n\tif err := Migrate(db); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n```\n" +
			"After that the suite should be green again; the flaky retry in `waitForLeader` is unrelated. " +
			"The leader election waits for a quorum of three, and on a two-node CI cluster it never gets one, " +
			"so the test times out after thirty seconds; that is a separate issue worth its own ticket.\n\n" +
			"I also checked the connection pool: `MaxOpenConns` is 10 while the test runs 16 parallel subtests, " +
			"so six of them wait on a connection and the slowest hits the 5 s deadline. Raising the pool to 20 " +
			"in the test config (not in production) keeps the timing stable.",
		"Here is the plan:\n1. Pin the Go toolchain to 1.26 in go.mod.\n2. Cache the module download in CI.\n" +
			"3. Split the slow end-to-end tests behind a build tag.\nThe token budget for this step was 1200 tokens.\n\n" +
			"Two notes on the review so far. The retry loop in `client.Do` retries on every error, including " +
			"context cancellation, which hides the real failure; it should stop when ctx.Err() != nil. And the " +
			"config loader reads `API_TIMEOUT` as seconds in one place and milliseconds in another: I made both " +
			"milliseconds and added a test. 我已经更新了文档。\nRun `make test` to confirm; it takes about 40 s here. " +
			"The remaining warnings come from the vendored protobuf code and can be ignored for now; they go " +
			"away with the next regeneration, which needs protoc 29 on the build image.",
	}
	tools := []struct{ name, out string }{
		{"read_file", strings.Repeat("package store\n\nimport (\n\t\"context\"\n\t\"errors\"\n)\n\n// Get returns the value of key.\nfunc (s *Store) Get(ctx context.Context, key string) ([]byte, error) {\n\tif key == \"\" {\n\t\treturn nil, errors.New(\"empty key\")\n\t}\n\treturn s.kv.Get(ctx, key)\n}\n", 5)},
		{"bash", strings.ReplaceAll("=== RUN   TestMigrate\n--- FAIL: TestMigrate (0.42s)\n    migrate_test.go:31: pq: permission denied for table users\n"+
			"=== RUN   TestList\n--- PASS: TestList (0.01s)\nFAIL\nexit status 1\nFAIL\tgithub.com/acme/api/store\t0.512s\n"+
			"export DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/app\n"+
			strings.Repeat("2026/11/29 12:00:01 INFO request done method=GET path=/v1/items status=200 dur=3ms\n", 12), "\n", "\r\n")},
		{"http_get", `{"status":"ok","items":[{"id":1,"name":"alpha","tags":["a","b"]},{"id":2,"name":"beta","tags":[]}],` +
			`"next":"https://api.example.com/v1/items?page=2","elapsed_ms":31,"note":"服务正常"}` + strings.Repeat(` {"id":3,"name":"gamma"}`, 52)},
		{"grep", strings.Repeat("internal/store/kv.go:42:\tif err := s.kv.Put(ctx, key, value); err != nil {\ninternal/store/kv.go:57:\treturn s.kv.Delete(ctx, key)\n", 11)},
	}
	var entries []Entry
	for i := 0; len(entries) < 24; i++ {
		switch i % 3 {
		case 0:
			entries = append(entries, Entry{ID: fmt.Sprint(len(entries)), Role: "user", Content: user[i/3%len(user)]})
		case 1:
			entries = append(entries, Entry{ID: fmt.Sprint(len(entries)), Role: "assistant", Content: assistant[i/3%len(assistant)]})
		default:
			t := tools[i/3%len(tools)]
			entries = append(entries, Entry{ID: fmt.Sprint(len(entries)), Role: "tool", ToolName: t.name, Content: t.out})
		}
	}
	entries[10].Content += " my key is " + testKey
	return entries
}

// benchLongEntries returns 24 entries whose transcript is near
// MaxTranscriptRunes: every tool output is over MaxEntryRunes and cut.
func benchLongEntries() []Entry {
	entries := benchEntries()
	for i := range entries {
		if entries[i].Role != "user" {
			entries[i].Content = strings.Repeat(entries[i].Content+"\n", 3)
		}
	}
	return entries
}

func BenchmarkRenderTranscript(b *testing.B) {
	for _, bc := range []struct {
		name    string
		entries []Entry
	}{
		{"chat24", benchEntries()},
		{"nearMax", benchLongEntries()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			size := 0
			for _, e := range bc.entries {
				size += len(e.Content)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				RenderTranscript(bc.entries)
			}
		})
	}
}
