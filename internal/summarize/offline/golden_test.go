package offline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/semantic"
)

// goldenDigest summarizes every chunk of every lane in order, carrying each
// output as the next chunk's previous semantic, and hashes the outputs, so a
// digest pins the exact bytes of all of them.
func goldenDigest(t *testing.T, o Options, lanes [][][]engine.EventView, tweak func(*engine.Payload)) string {
	t.Helper()
	s := New(o)
	h := sha256.New()
	for _, chunks := range lanes {
		var prev *semantic.Semantic
		first := chunks[0][0].ChatSeq
		for _, c := range chunks {
			p := payload(c, first, prev)
			if tweak != nil {
				tweak(&p)
			}
			got, err := s.Summarize(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			prev = got.Output.(*semantic.Semantic)
			data, err := json.Marshal(prev)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(data)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// generated returns lanegen lanes of the given sizes over a few seeds, each
// cut into one to four chunks.
func generated(t *testing.T, sizes []int, seeds uint64) [][][]engine.EventView {
	var out [][][]engine.EventView
	for _, n := range sizes {
		for seed := range seeds {
			lane := laneViews(t, lanegen.Options{Events: n, Seed: seed, LargeToolEvery: int(seed%4) + 1, SecretEvery: int(seed%3) + 1, ChineseEvery: int(seed%5) + 1})
			out = append(out, splitChunks(lane, int(seed%4)+1))
		}
	}
	return out
}

// proseLane is the shape of the processor benchmark's lane: long user and
// assistant turns of repeated sentences stating a rule and a decision.
func proseLane(n int) [][]engine.EventView {
	list := make([]ev, n)
	for i := range list {
		text := fmt.Sprintf("req turn %d: we decided the deploy must use blue-green releases; ", i+1) +
			strings.Repeat(fmt.Sprintf("detail %d of the investigation into the flaky integration test. ", i), 16)
		list[i] = ev{role: []string{"user", "assistant"}[i%2], text: text}
	}
	return [][]engine.EventView{chunk(1, list...)}
}

// unicodeLane holds texts whose lower-case form changes length (İ, K, ẞ),
// upper-case keywords, Chinese punctuation and invalid UTF-8.
func unicodeLane() [][]engine.EventView {
	return [][]engine.EventView{chunk(1,
		user("İSTANBUL builds MUST stay green. We NEVER skip `go vet ./...`! İ think the KELVIN K sign is fine."),
		assistant("İ decided to use ẞtraße because it is shorter. I'll use v1.2.3 instead of v1.2.0 since it fixes #1234."),
		user("必须保持兼容。不要删除测试！其实改成 internal/store/kv.go 吧；"),
		assistant("我们决定采用蓝绿发布，因为更安全。Done: implemented the İndex change. All tests pass."),
		user("Actually, don’t touch https://example.com/a/b?c=d. \xff\xfe broken bytes must go."),
		assistant("Going with Kubernetes. This is because K8s runs everywhere.\nSwitching to gRPC, so that calls are typed."),
		calls("Running it.", "c1", "run_command", `{"command":"go test ./internal/...\nmore"}`),
		result("c1", "run_command", "", "--- FAIL: TestX (0.00s)\n    x_test.go:12: want 1, got 2\nFAIL"),
		calls("Again.", "c2", "run_command", `{"command":"go test ./internal/..."}`),
		result("c2", "run_command", "success", "ok"),
		user("Fix it. Then rerun `make lint` and check 3f2a9c1d in JIRA-42 and 123e4567-e89b-12d3-a456-426614174000."),
	)}
}

// TestGoldenOutputs pins the exact output on realistic lanes: faster code
// must produce the same bytes.
func TestGoldenOutputs(t *testing.T) {
	small := Options{MinBytes: minBudget, MaxBytes: 2 * minBudget, MaxCitations: 1, MaxTextBytes: 64, ExcerptBytes: 32}
	repair := func(p *engine.Payload) {
		p.Repair = &engine.Repair{Error: engine.RepairError{Type: "semantic_too_large", Details: map[string]any{"limit": 1500.0}}}
	}
	noTokens := func(p *engine.Payload) { p.MaximumOutputTokens = 0 }
	cases := []struct {
		name  string
		o     Options
		lanes [][][]engine.EventView
		tweak func(*engine.Payload)
		want  string
	}{
		{"prose", DefaultOptions(), [][][]engine.EventView{proseLane(24)}, nil, "f3120813c16ac234eedbe8da03b8433dc42d007b8b777c9f578202a627bf2177"},
		{"prose-small", small, [][][]engine.EventView{proseLane(24)}, nil, "87e7e393d23780bd51654f6d81f20e009cf9de1f407519b52b12d01ecbc9f41e"},
		{"unicode", DefaultOptions(), [][][]engine.EventView{unicodeLane()}, nil, "c4baceb5f0e4651cb5220d7f8aa450e22bf4428c18bdcb7e3832eff2a5963c54"},
		{"unicode-small", small, [][][]engine.EventView{unicodeLane()}, nil, "71a14d8daeba95df9b549ee39b85436ab115b97cb23bc92af035fa498c625609"},
		{"lanegen", DefaultOptions(), generated(t, []int{1, 2, 7, 24, 120, 400}, 6), nil, "89dbf42973920d1612146c4cdc2d345a4f3ba63a6031d6566b2184924be367c8"},
		{"lanegen-small", small, generated(t, []int{7, 24, 120, 400}, 4), nil, "b77a4a667a5f8b23fb164fb34e51feafacb81fdea43e2ccf78ee6d7b639c17a9"},
		{"lanegen-large", DefaultOptions(), generated(t, []int{3000}, 2), noTokens, "2345d2e1fcb48fe3ac479070f42560ebb1f2c29e4b25a451dc6f4f7e7166a947"},
		{"lanegen-repair", DefaultOptions(), generated(t, []int{24, 300}, 3), repair, "62d2245d7b2e80185f67575055917a9f476cd18904e032c3781b26dca3312296"},
	}
	for _, c := range cases {
		if got := goldenDigest(t, c.o, c.lanes, c.tweak); got != c.want {
			t.Errorf("%s: digest %s, want %s", c.name, got, c.want)
		}
	}
}
