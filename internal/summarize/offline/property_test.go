package offline

import (
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
)

// TestRollingSummaryIsAlwaysValid drives the summarizer the way the engine's
// rolling summarization does, over many generated lanes cut into one to four
// chunks, and over a second generation that carries the first summary as
// lineage; every intermediate output must validate against its sources.
func TestRollingSummaryIsAlwaysValid(t *testing.T) {
	sizes := []int{1, 2, 7, 30, 120, 400, 1500}
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for _, events := range sizes {
		for seed := range uint64(seeds) {
			lane := laneViews(t, lanegen.Options{Events: events, Seed: seed, LargeToolEvery: int(seed%4) + 1, SecretEvery: int(seed%3) + 1})
			chunks := int(seed%4) + 1
			for _, o := range []Options{DefaultOptions(), {MinBytes: minBudget, MaxBytes: minBudget * 2, MaxCitations: 1}} {
				s := New(o)
				half := len(lane) / 2
				if half == 0 {
					rollingSummary(t, s, splitChunks(lane, chunks), nil)
					continue
				}
				first := rollingSummary(t, s, splitChunks(lane[:half], chunks), nil)
				rollingSummary(t, s, splitChunks(lane[half:], chunks), first)
			}
		}
	}
}

// FuzzSummarize feeds arbitrary text as user, assistant and tool content
// and call arguments; the output must always be valid.
func FuzzSummarize(f *testing.F) {
	f.Add("Never log sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD. Use `go test ./...`", `{"command":"go vet ./..."}`, "error")
	f.Add("必须保持兼容。不要删除测试。", `not json`, "success")
	f.Add("\xff\xfe", `{"path":"\u2028a/b.go"}`, "")
	f.Fuzz(func(t *testing.T, text, args, status string) {
		events := chunk(1,
			user(text),
			calls(text, "c1", "run_command", args),
			result("c1", "run_command", status, text),
			assistant(text),
		)
		events[2].ArtifactIDs = []string{"a1"}
		rollingSummary(t, New(Options{MaxBytes: minBudget * 2, MinBytes: minBudget}), [][]engine.EventView{events}, nil)
	})
}
