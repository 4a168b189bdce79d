package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// ev describes one test event; ids and sequence numbers are assigned by chunk.
type ev struct {
	role string
	text string
	tool map[string]any
	arts []string
}

func user(text string) ev      { return ev{role: "user", text: text} }
func assistant(text string) ev { return ev{role: "assistant", text: text} }

// calls is an assistant event issuing one tool call with JSON arguments.
func calls(text, id, name, args string) ev {
	return ev{role: "assistant", text: text, tool: map[string]any{"calls": []any{
		map[string]any{"call_id": id, "name": name, "arguments": args},
	}}}
}

func result(id, name, status, output string) ev {
	return ev{role: "tool", text: output, tool: map[string]any{"call_id": id, "name": name, "status": status}}
}

func eventID(n int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012d", n) }

// chunk turns descriptions into events with chat_seq from first on.
func chunk(first int, list ...ev) []engine.EventView {
	out := make([]engine.EventView, len(list))
	for i, e := range list {
		text := e.text
		arts := e.arts
		if arts == nil {
			arts = []string{}
		}
		out[i] = engine.EventView{
			EventID: eventID(first + i), ChatSeq: int64(first + i), LaneEventOrdinal: int64(first + i),
			RunAgentID: "agent", CheckpointNamespace: "root", Role: e.role,
			Content: &text, Tool: e.tool, ArtifactIDs: arts,
		}
	}
	return out
}

// run summarizes one chunk and checks the output is valid for it.
func run(t *testing.T, events []engine.EventView, prev *semantic.Semantic) *semantic.Semantic {
	t.Helper()
	return rollingSummary(t, New(DefaultOptions()), [][]engine.EventView{events}, prev)
}

func texts[T any](list []T, text func(T) string) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, text(e))
	}
	return out
}

func sourcedTexts(list []semantic.Sourced) []string {
	return texts(list, func(e semantic.Sourced) string { return e.Text })
}

func TestConstraints(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"must", "Add a cache. The API must stay stable.", []string{"The API must stay stable."}},
		{"never and always", "Never log tokens! Always run go vet ./... first.", []string{"Never log tokens!", "Always run go vet ./... first."}},
		{"don't", "Don't add dependencies.", []string{"Don't add dependencies."}},
		{"do not", "Please do not touch internal/gen/.", []string{"Please do not touch internal/gen/."}},
		{"no marker", "Make it faster. Mustard is a condiment.", []string{}},
		{"chinese", "修复这个问题。必须保持向后兼容，不要修改 go.mod。禁止打印日志。", []string{"必须保持向后兼容，不要修改 go.mod。", "禁止打印日志。"}},
		{"chinese yiding", "一定要先跑测试", []string{"一定要先跑测试"}},
		{"secret masked", "Never share the key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD with anyone.", []string{"Never share the key [REDACTED:openai_api_key] with anyone."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, chunk(1, user(c.text)), nil)
			if got := sourcedTexts(out.Constraints); !slices.Equal(got, c.want) {
				t.Fatalf("constraints %q, want %q", got, c.want)
			}
			for _, e := range out.Constraints {
				if !slices.Equal(e.SourceEventIDs, []string{eventID(1)}) {
					t.Errorf("constraint cites %v, want the user event", e.SourceEventIDs)
				}
			}
		})
	}
}

func TestConstraintsOnlyFromUsers(t *testing.T) {
	out := run(t, chunk(1, user("Fix it."), assistant("You must be patient.")), nil)
	if len(out.Constraints) != 0 {
		t.Fatalf("constraints %v from an assistant event", sourcedTexts(out.Constraints))
	}
}

func TestRepeatedConstraintIsMergedNotDuplicated(t *testing.T) {
	out := run(t, chunk(1, user("Never log tokens."), assistant("ok"), user("Again: never log tokens. Never log tokens.")), nil)
	if len(out.Constraints) != 2 {
		t.Fatalf("constraints %q, want two distinct texts", sourcedTexts(out.Constraints))
	}
	last := out.Constraints[1]
	if last.Text != "Never log tokens." || !slices.Equal(last.SourceEventIDs, []string{eventID(1), eventID(3)}) {
		t.Fatalf("merged constraint %+v, want both user events cited, newest last", last)
	}
}

func TestDecisions(t *testing.T) {
	cases := []struct {
		name, text, choice string
		rationale          *string
	}{
		{"i'll use with because", "I'll use backoff/v4 instead of a loop, because it honours ctx.", "I'll use backoff/v4 instead of a loop", ptr("it honours ctx")},
		{"decided", "Decided to keep the old schema.", "Decided to keep the old schema.", nil},
		{"instead of", "Going with NATS KV instead of Redis so that there is one store.", "Going with NATS KV instead of Redis", ptr("there is one store")},
		{"reason in next sentence", "I'll use encoding/csv. Because quoting is subtle.", "I'll use encoding/csv.", ptr("Because quoting is subtle.")},
		{"chinese", "我决定改用标准库。", "我决定改用标准库。", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, chunk(1, user("Go."), assistant(c.text)), nil)
			if len(out.Decisions) != 1 {
				t.Fatalf("decisions %+v, want one", out.Decisions)
			}
			d := out.Decisions[0]
			if d.Text != c.choice || !reflect.DeepEqual(d.Rationale, c.rationale) || !slices.Equal(d.SourceEventIDs, []string{eventID(2)}) {
				t.Fatalf("decision %q rationale %v ids %v, want %q %v", d.Text, deref(d.Rationale), d.SourceEventIDs, c.choice, deref(c.rationale))
			}
		})
	}
	out := run(t, chunk(1, user("Go."), assistant("Looking at the code now.")), nil)
	if len(out.Decisions) != 0 {
		t.Fatalf("decisions %+v from a plain statement", out.Decisions)
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestErrorsOpenAndResolved(t *testing.T) {
	test := `{"command":"go test ./internal/store/..."}`
	fail := "=== RUN   TestKV\n    kv_test.go:42: got 2 attempts, want 3\n--- FAIL: TestKV (0.01s)\nFAIL\n"
	cases := []struct {
		name   string
		events []ev
		want   []string // status of each error, oldest first
	}{
		{"failure stays open", []ev{calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail)}, []string{"open"}},
		{"success of the same call id resolves", []ev{
			calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail),
			calls("Again.", "c2", "run_command", test), result("c2", "run_command", "success", "ok"),
		}, []string{"resolved"}},
		{"success of another command does not", []ev{
			calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail),
			calls("Vet.", "c2", "run_command", `{"command":"go vet ./..."}`), result("c2", "run_command", "success", ""),
		}, []string{"open"}},
		{"repeated failures are one error", []ev{
			calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail),
			calls("Again.", "c2", "run_command", test), result("c2", "run_command", "error", "panic: nil map"),
		}, []string{"open"}},
		{"failure after a fix opens a new error", []ev{
			calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail),
			calls("Again.", "c2", "run_command", test), result("c2", "run_command", "success", "ok"),
			calls("Third.", "c3", "run_command", test), result("c3", "run_command", "error", fail),
		}, []string{"resolved", "open"}},
		{"status missing, output decides", []ev{calls("Run.", "c1", "run_command", test), {role: "tool", text: fail, tool: map[string]any{"call_id": "c1"}}}, []string{"open"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, chunk(1, c.events...), nil)
			got := texts(out.Errors, func(e semantic.ErrorEntry) string { return e.Status })
			if !slices.Equal(got, c.want) {
				t.Fatalf("error statuses %v, want %v: %+v", got, c.want, out.Errors)
			}
			msg := out.Errors[0].Message
			if !strings.HasPrefix(msg, "run_command `go test ./internal/store/...` failed: ") {
				t.Errorf("message %q does not name the command", msg)
			}
		})
	}
	out := run(t, chunk(1, calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", fail)), nil)
	if want := "run_command `go test ./internal/store/...` failed: kv_test.go:42: got 2 attempts, want 3; --- FAIL: TestKV (0.01s)"; out.Errors[0].Message != want {
		t.Errorf("message %q, want %q", out.Errors[0].Message, want)
	}
}

func TestCarriedOpenErrorIsResolvedByALaterSuccess(t *testing.T) {
	test := `{"command":"go test ./..."}`
	first := run(t, chunk(1, user("Fix the build."), calls("Run.", "c1", "run_command", test), result("c1", "run_command", "error", "FAIL x")), nil)
	if first.Errors[0].Status != "open" || len(first.Progress.Blocked) != 1 {
		t.Fatalf("first chunk: errors %+v blocked %+v", first.Errors, first.Progress.Blocked)
	}
	second := run(t, chunk(4, calls("Again.", "c2", "run_command", test), result("c2", "run_command", "success", "ok")), first)
	if len(second.Errors) != 1 || second.Errors[0].Status != "resolved" {
		t.Fatalf("carried error %+v, want it resolved", second.Errors)
	}
	if len(second.Progress.Blocked) != 0 {
		t.Fatalf("blocked %+v, want the call unblocked", second.Progress.Blocked)
	}
}

func TestProgress(t *testing.T) {
	out := run(t, chunk(1,
		user("Fix the store."),
		calls("Reading.", "c1", "read_file", `{"path":"internal/store/kv.go"}`),
		result("c1", "read_file", "success", "package store"),
		calls("Testing.", "c2", "run_command", `{"command":"go test ./internal/store/..."}`),
		result("c2", "run_command", "error", "--- FAIL: TestKV"),
		calls("Linting.", "c3", "run_command", `{"command":"make lint"}`),
	), nil)
	completed := texts(out.Progress.Completed, func(p semantic.ProgressItem) string { return p.Text })
	blocked := texts(out.Progress.Blocked, func(p semantic.ProgressItem) string { return p.Text })
	active := texts(out.Progress.Active, func(p semantic.ProgressItem) string { return p.Text })
	if !slices.Equal(completed, []string{"read_file internal/store/kv.go: succeeded"}) ||
		!slices.Equal(blocked, []string{"run_command `go test ./internal/store/...`: failing"}) ||
		!slices.Equal(active, []string{"run_command `make lint`: awaiting result (call_id c3)"}) {
		t.Fatalf("completed %q blocked %q active %q", completed, blocked, active)
	}
	done := out.Progress.Completed[0]
	if !slices.Equal(done.SourceEventIDs, []string{eventID(2)}) || !slices.Equal(done.VerificationEventIDs, []string{eventID(3)}) {
		t.Fatalf("completed item cites %v verified by %v, want the call and its result", done.SourceEventIDs, done.VerificationEventIDs)
	}
}

func TestReportedCompletionIsProgress(t *testing.T) {
	out := run(t, chunk(1,
		user("Add retries."),
		calls("Testing.", "c1", "run_command", `{"command":"go test ./..."}`),
		result("c1", "run_command", "success", "ok"),
		assistant("Done: retries added. All tests pass."),
	), nil)
	var found *semantic.ProgressItem
	for i, p := range out.Progress.Completed {
		if p.Text == "Done: retries added." {
			found = &out.Progress.Completed[i]
		}
	}
	if found == nil || !slices.Equal(found.VerificationEventIDs, []string{eventID(3)}) {
		t.Fatalf("completed %+v, want the report verified by the passing run", out.Progress.Completed)
	}
}

func TestArtifactRefs(t *testing.T) {
	projected := result("c1", "run_command", "error", "")
	projected.arts = []string{"0190aaaa-0000-7000-8000-000000000001"}
	events := chunk(1, user("Run it."), calls("Running.", "c1", "run_command", `{"command":"go test ./..."}`), projected)
	events[2].Content = nil
	events[2].Truncated = true
	events[2].Tool["result_excerpt"] = "--- FAIL: TestBig\n...[projected]...\nFAIL"
	events[2].Tool["artifact_ids"] = []any{"0190aaaa-0000-7000-8000-000000000001"}
	out := run(t, events, nil)
	want := []semantic.ArtifactRef{{
		ArtifactID:     "0190aaaa-0000-7000-8000-000000000001",
		Purpose:        "full output of run_command `go test ./...` (error)",
		SourceEventIDs: []string{eventID(3)},
	}}
	if !reflect.DeepEqual(out.ArtifactRefs, want) {
		t.Fatalf("artifact refs %+v, want %+v", out.ArtifactRefs, want)
	}
	if len(out.Errors) != 1 || !strings.Contains(out.Errors[0].Message, "--- FAIL: TestBig") {
		t.Fatalf("errors %+v, want the excerpt's failure", out.Errors)
	}
}

func TestCriticalContextIdentifiers(t *testing.T) {
	text := "See internal/store/kv.go:42 and ./cmd/migrate/main.go, run `go test ./internal/store/...`, " +
		"read https://pkg.go.dev/github.com/cenkalti/backoff/v4. Bump to v4.3.0 (go1.26), fixes #1234 in commit 9f3c2ab, " +
		"request 0190aaaa-0000-7000-8000-00000000abcd and CVE-2024-3094. Not ids: 0.034s, deadbeef, 12345678, and/or."
	out := run(t, chunk(1, user("Fix it."), assistant(text)), nil)
	got := map[string][]string{}
	for _, e := range out.CriticalContext {
		header, body, _ := strings.Cut(e.Text, "\n")
		got[header] = strings.Split(body, "\n")
		if !slices.Equal(e.SourceEventIDs, []string{eventID(2)}) {
			t.Errorf("%s cites %v", header, e.SourceEventIDs)
		}
	}
	want := map[string][]string{
		"Files:":    {"internal/store/kv.go", "./cmd/migrate/main.go"},
		"Commands:": {"go test ./internal/store/..."},
		"URLs:":     {"https://pkg.go.dev/github.com/cenkalti/backoff/v4"},
		"IDs:":      {"#1234", "9f3c2ab", "0190aaaa-0000-7000-8000-00000000abcd", "CVE-2024-3094"},
		"Versions:": {"v4.3.0", "go1.26"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("critical context\n got %q\nwant %q", got, want)
	}
}

func TestSecretsNeverReachCriticalContext(t *testing.T) {
	out := run(t, chunk(1, user("Use https://user:hunter2secret@db.example.com/x and ghp_abcdefghijklmnopqrstuvwxyz0123456789 here.")), nil)
	data, _ := json.Marshal(out)
	for _, secret := range []string{"hunter2secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("output contains secret %q: %s", secret, data)
		}
	}
}

func TestUserRequests(t *testing.T) {
	long := strings.Repeat("word ", 200)
	cases := []struct {
		name    string
		events  []ev
		excerpt []string
		status  []string
	}{
		{"newest is active", []ev{user("Add retries to internal/store/kv.go. Keep it small.")},
			[]string{"Add retries to internal/store/kv.go. Keep it small."}, []string{"active"}},
		{"completion report completes", []ev{user("Add retries."), assistant("Done: retries added."), user("Now add metrics.")},
			[]string{"Add retries.", "Now add metrics."}, []string{"completed", "active"}},
		{"take-back supersedes", []ev{user("Rename the package."), user("Actually, keep the name and add an alias.")},
			[]string{"Rename the package.", "Actually, keep the name and add an alias."}, []string{"superseded", "active"}},
		{"chinese take-back supersedes", []ev{user("重命名这个包。"), user("算了，保留原名。")},
			[]string{"重命名这个包。", "算了，保留原名。"}, []string{"superseded", "active"}},
		{"long request is clipped", []ev{user(long)}, []string{strings.TrimSpace(long[:300])}, []string{"active"}},
		{"excerpt stops before a secret", []ev{user("Deploy the staging build with key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD now.")},
			[]string{"Deploy the staging build with key"}, []string{"active"}},
		{"blank message is no request", []ev{user("   \n ")}, []string{}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, chunk(1, c.events...), nil)
			excerpts := texts(out.UserRequests, func(r semantic.UserRequest) string { return deref(r.ExactExcerpt) })
			status := texts(out.UserRequests, func(r semantic.UserRequest) string { return r.Status })
			if !slices.Equal(excerpts, c.excerpt) || !slices.Equal(status, c.status) {
				t.Fatalf("requests %q %v, want %q %v", excerpts, status, c.excerpt, c.status)
			}
		})
	}
}

func TestSecretOnlyRequestBecomesOmission(t *testing.T) {
	out := run(t, chunk(1, user("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD")), nil)
	if len(out.UserRequests) != 1 {
		t.Fatalf("requests %+v", out.UserRequests)
	}
	r := out.UserRequests[0]
	if r.ExactExcerpt != nil || r.SecretOmission == nil || r.SecretOmission.Class != "openai_api_key" {
		t.Fatalf("request %+v, want a secret omission", r)
	}
}

func TestObjectiveFromFirstAndNewestRequest(t *testing.T) {
	out := run(t, chunk(1, user("Build the exporter."), assistant("Done: exporter built."), user("Add CSV quoting."), assistant("ok"), user("Then add a --dry-run flag.")), nil)
	if got := sourcedTexts(out.Objective); !slices.Equal(got, []string{"Build the exporter.", "Then add a --dry-run flag."}) {
		t.Fatalf("objective %q", got)
	}
}

func TestPreviousSemanticIsCarriedAndMerged(t *testing.T) {
	first := run(t, chunk(1,
		user("Never log tokens. Add retries to internal/store/kv.go."),
		calls("I'll use backoff/v4 because it is vetted.", "c1", "read_file", `{"path":"internal/store/kv.go"}`),
		result("c1", "read_file", "success", "package store"),
	), nil)
	second := run(t, chunk(4,
		user("Never log tokens. Also add metrics in internal/queue/metrics.go."),
		calls("I'll use backoff/v4 because it is vetted.", "c2", "read_file", `{"path":"internal/store/kv.go"}`),
		result("c2", "read_file", "success", "package store"),
	), first)

	if got := sourcedTexts(second.Constraints); !slices.Equal(got, []string{"Never log tokens."}) {
		t.Fatalf("constraints %q, want one merged entry", got)
	}
	if ids := second.Constraints[0].SourceEventIDs; !slices.Equal(ids, []string{eventID(1), eventID(4)}) {
		t.Errorf("merged constraint cites %v", ids)
	}
	if len(second.Decisions) != 1 || len(second.Progress.Completed) != 1 {
		t.Errorf("decisions %+v completed %+v, want merged entries", second.Decisions, second.Progress.Completed)
	}
	if !reflect.DeepEqual(second.UserRequests[0], first.UserRequests[0]) {
		t.Errorf("carried request changed: %+v -> %+v", first.UserRequests[0], second.UserRequests[0])
	}
	var files string
	for _, e := range second.CriticalContext {
		if strings.HasPrefix(e.Text, "Files:") {
			files = e.Text
		}
	}
	if files != "Files:\ninternal/queue/metrics.go\ninternal/store/kv.go" {
		t.Errorf("files %q, want carried and new paths once each, least recent first", files)
	}
}

func TestCarriedListsDropOldestAtTheBound(t *testing.T) {
	prev := emptySemantic(semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 64})
	for i := range 64 {
		text := fmt.Sprintf("Never break rule %d.", i)
		prev.Constraints = append(prev.Constraints, semantic.Sourced{Text: text, SourceEventIDs: []string{eventID(i + 1)}})
	}
	out := rollingSummary(t, New(Options{MinBytes: maxSemanticBytes, MaxBytes: maxSemanticBytes}), [][]engine.EventView{chunk(100, user("Never use panics."))}, prev)
	if len(out.Constraints) != 64 || out.Constraints[0].Text != "Never break rule 1." || out.Constraints[63].Text != "Never use panics." {
		t.Fatalf("constraints: %d, first %q, last %q", len(out.Constraints), out.Constraints[0].Text, out.Constraints[63].Text)
	}
}

func emptySemantic(cov semantic.Coverage) *semantic.Semantic {
	o := &output{s: &semantic.Semantic{Coverage: cov}}
	o.clear()
	return o.s
}

func TestCoverageIsThePayloadRange(t *testing.T) {
	events := chunk(10, user("Go."), assistant("ok"))
	p := payload(events, 3, nil)
	got, err := New(DefaultOptions()).Summarize(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if cov := got.Output.(*semantic.Semantic).Coverage; cov != (semantic.Coverage{FirstChatSeq: 3, LastChatSeq: 11}) {
		t.Fatalf("coverage %+v", cov)
	}
}

func TestDeterministic(t *testing.T) {
	events := laneViews(t, laneOpts(400, 9))
	s := New(DefaultOptions())
	a, _ := s.Summarize(context.Background(), payload(events, 1, nil))
	b, _ := s.Summarize(context.Background(), payload(events, 1, nil))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs over the same payload differ")
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(DefaultOptions()).Summarize(ctx, payload(chunk(1, user("Go.")), 1, nil))
	if errcode.Code(err) != errcode.ProviderError {
		t.Fatalf("err %v, want %s", err, errcode.ProviderError)
	}
}

func TestHostileEventsDoNotPanic(t *testing.T) {
	bad := "\xff\xfe invalid utf-8 `go test \xff`"
	events := []engine.EventView{
		{EventID: "", ChatSeq: 1, Role: "user", Content: &bad},
		{EventID: strings.Repeat("x", 201), ChatSeq: 2, Role: "user", Content: &bad},
		{EventID: "a", ChatSeq: 3, Role: "user", Content: &bad},
		{EventID: "b", ChatSeq: 4, Role: "assistant", Tool: map[string]any{"calls": "not a list"}},
		{EventID: "c", ChatSeq: 5, Role: "assistant", Tool: map[string]any{"calls": []any{1, nil, map[string]any{"arguments": 7}}}},
		{EventID: "d", ChatSeq: 6, Role: "tool", Tool: map[string]any{"call_id": 5, "status": []any{}}, ArtifactIDs: []string{"", "\xff"}},
		{EventID: "e", ChatSeq: 7, Role: "system"},
		{EventID: "f", ChatSeq: 8, Role: "user", Tool: map[string]any{"result_excerpt": "Please quote me."}},
	}
	out := run(t, events, nil)
	if len(out.UserRequests) != 0 {
		t.Fatalf("requests %+v from invalid text", out.UserRequests)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero options invalid: %v", err)
	}
	for _, o := range []Options{{MaxBytes: 200000}, {MaxCitations: 33}, {Ratio: 1.5}, {MaxTextBytes: 5000}, {MinBytes: 8000, MaxBytes: 4000}} {
		err := o.Validate()
		if errcode.Code(err) != errcode.Internal {
			t.Errorf("%+v: err %v, want a typed configuration error", o, err)
		}
	}
	if got := New(Options{MaxCitations: 99}).opts.MaxCitations; got != 32 {
		t.Errorf("New clamps MaxCitations to %d, want 32", got)
	}
}

func TestCallAwaitingAcrossChunksIsSettledByItsResult(t *testing.T) {
	test := `{"command":"go test ./..."}`
	first := run(t, chunk(1, user("Fix the build."), calls("Run.", "c1", "run_command", test)), nil)
	if len(first.Progress.Active) != 1 {
		t.Fatalf("active %+v, want the call awaiting its result", first.Progress.Active)
	}
	second := run(t, chunk(3, result("c1", "run_command", "error", "--- FAIL: TestX")), first)
	if len(second.Progress.Active) != 0 || len(second.Progress.Blocked) != 1 || len(second.Errors) != 1 {
		t.Fatalf("active %+v blocked %+v errors %+v", second.Progress.Active, second.Progress.Blocked, second.Errors)
	}
	if msg := second.Errors[0].Message; !strings.HasPrefix(msg, "run_command `go test ./...` failed: ") {
		t.Fatalf("error %q does not name the carried call", msg)
	}
}
