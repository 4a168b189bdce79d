package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"
)

// laneBuilder appends sealed events of one coding-agent lane.
type laneBuilder struct {
	t          testing.TB
	laneEvents []events.InputEvent
	calls      int
	artifact   int
}

// eventID is a UUIDv7-shaped id: a fixed millisecond timestamp prefix plus a
// counter, like ids a host allocates in order.
func laneEventID(n int) string {
	return fmt.Sprintf("0192b6e4-%04x-7%03x-8%03x-%012x", (n>>24)&0xffff, (n>>12)&0xfff, n&0xfff, 0x5eed0000+n)
}

func (b *laneBuilder) add(role string, content *string, tool map[string]any, artifacts []string) string {
	n := len(b.laneEvents) + 1
	origin := "derived"
	if role == events.RoleUser {
		origin = "direct_user"
	}
	e := events.InputEvent{
		EventID: laneEventID(n), RunAgentID: "agent-coder", ChatSeq: int64(n), LaneEventOrdinal: int64(n),
		CheckpointNamespace: "root", Role: role, Provenance: map[string]any{"origin": origin},
		Content: content, Tool: tool, ArtifactIDs: artifacts,
	}
	if artifacts == nil {
		e.ArtifactIDs = []string{}
	}
	b.laneEvents = append(b.laneEvents, seal(b.t, e))
	return e.EventID
}

func (b *laneBuilder) user(text string)      { b.add(events.RoleUser, ptr(text), nil, nil) }
func (b *laneBuilder) assistant(text string) { b.add(events.RoleAssistant, ptr(text), nil, nil) }

// toolCall records an assistant message issuing one shell call and the
// tool's result; a result over 2 KiB gets a durable artifact id.
func (b *laneBuilder) toolCall(note, cmd, output string) {
	b.calls++
	callID := fmt.Sprintf("call_%06d", b.calls)
	b.add(events.RoleAssistant, ptr(note), map[string]any{"calls": []any{map[string]any{
		"call_id": callID, "name": "shell", "arguments": map[string]any{"cmd": cmd}}}}, nil)
	var artifacts []string
	if len(output) > projectionThreshold {
		b.artifact++
		artifacts = []string{fmt.Sprintf("0192b6e4-a000-7000-9000-%012x", b.artifact)}
	}
	status := "success"
	if strings.Contains(output, "FAIL") {
		status = "error"
	}
	b.add(events.RoleTool, ptr(output), map[string]any{"call_id": callID, "name": "shell", "status": status}, artifacts)
}

var laneFiles = []string{"internal/store/cache.go", "internal/store/cache_test.go", "cmd/api/main.go",
	"internal/http/handler.go", "internal/http/middleware.go", "docs/architecture.md", "internal/auth/token.go"}

// largeOutput is a verbose test log of about size bytes.
func largeOutput(step, size int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "=== RUN   TestCache/case_%d_%d\n--- PASS: TestCache/case_%d_%d (0.%02ds)\n", step, i, step, i, i%100)
	}
	sb.WriteString("FAIL\tgithub.com/acme/shop/internal/store\t2.314s\n")
	return sb.String()
}

// codingLane builds a realistic lane of about n events: users asking for
// work, assistants planning and running commands, tool results with failing
// and passing tests, file paths and URLs, and a large log with an artifact
// every largeEvery steps (0: never).
func codingLane(t testing.TB, n, largeEvery int) []events.InputEvent {
	b := &laneBuilder{t: t}
	asks := []string{
		"Add an LRU cache in front of the product store; keep memory under 64 MiB.",
		"The cache must be invalidated when a product is updated through the admin API.",
		"Please also expose hit/miss counters on /metrics.",
		"Tests are flaky on CI, can you look at https://ci.example.com/acme/shop/runs/4812?",
		"Remember: never log customer emails.",
		"Now document the design in docs/architecture.md.",
	}
	for step := 0; len(b.laneEvents) < n; step++ {
		if step%6 == 0 {
			b.user(asks[(step/6)%len(asks)])
		}
		file := laneFiles[step%len(laneFiles)]
		b.assistant(fmt.Sprintf("Step %d: I will inspect %s and adjust the code accordingly.", step, file))
		switch {
		case largeEvery > 0 && step%largeEvery == largeEvery-1:
			b.toolCall("Running the full test suite with -race.", "go test -race ./...", largeOutput(step, 5000+step%7*300))
		case step%4 == 1:
			b.toolCall("Running the package tests.", "go test ./internal/store/...",
				fmt.Sprintf("--- FAIL: TestCacheEviction (0.01s)\n    cache_test.go:%d: got 3 entries, want 2\nFAIL\texit status 1", 40+step%50))
		case step%4 == 2:
			b.toolCall("Applying the fix.", "apply_patch "+file, fmt.Sprintf("patched %s: 1 hunk, +%d -%d", file, 3+step%9, 1+step%4))
		case step%4 == 3:
			b.toolCall("Re-running the tests after the fix.", "go test ./internal/store/...",
				fmt.Sprintf("ok  \tgithub.com/acme/shop/internal/store\t0.%03ds", 100+step%800))
		default:
			b.toolCall("Checking the file.", "sed -n 1,40p "+file, fmt.Sprintf("package %s\n\n// line %d of %s\nfunc Get(key string) (Product, bool) {", strings.Split(file, "/")[1], step, file))
		}
		b.assistant(fmt.Sprintf("The change to %s is in; see https://pkg.go.dev/container/list for the list type used.", file))
	}
	return b.laneEvents
}

// laneRequest wraps a lane in a manual request with the given input window.
func laneRequest(t testing.TB, id string, laneEvents []events.InputEvent, maxInput int64) *Request {
	rehydration, err := events.NewRehydrationState(map[string]any{"todo": map[string]any{"revision": int64(7)},
		"workspace": map[string]any{"branch": "feature/product-cache", "head": "9f1c2ab"}})
	if err != nil {
		t.Fatal(err)
	}
	last := laneEvents[len(laneEvents)-1]
	return &Request{
		V: 1, RequestID: id, Trigger: events.TriggerManual,
		ThreadID: "thread-shop-cache", RunID: "run-2026-09-02", RootTurnID: "turn-41", RunAgentID: "agent-coder",
		ProviderConnectionID: "openai-default", CheckpointNamespace: "root",
		DestinationIdentityHash: hashA,
		ModelProfile: events.ModelProfile{ContextLimitKind: events.LimitSeparateInput, MaxInputTokens: ptr(maxInput),
			MaxOutputTokens: ptr(int64(16_384)), ProviderReservedTokens: ptr(int64(0))},
		Events:              laneEvents,
		ActiveInputEventIDs: []string{last.EventID},
		RehydrationState:    rehydration,
		Policy:              events.DefaultPolicy(),
	}
}
