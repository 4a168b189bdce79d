package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

const fuzzSeedDir = "testdata/fuzz/FuzzDecodeRequest"

// FuzzDecodeRequest feeds arbitrary bytes to DecodeRequest and, when they
// decode, to Compact. Neither may panic; every error must be an
// *errcode.Error, and Compact must never report compaction_failed (which
// would mean it recovered from an internal panic).
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"v":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			if _, ok := err.(*errcode.Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if req.Events == nil {
			return
		}
		res, err := Compact(context.Background(), req, extractive{}, fixedNow)
		if err != nil {
			e, ok := err.(*errcode.Error)
			if !ok || e.Code == errcode.CompactionFailed {
				t.Fatalf("Compact failed badly: %T %v", err, err)
			}
			return
		}
		if res.Map() == nil {
			t.Fatal("nil result map")
		}
	})
}

// TestFuzzSeeds writes the committed seed corpus (with -update): the golden
// requests and targeted mutations of the fixture. Without -update it checks
// that the corpus is present.
func TestFuzzSeeds(t *testing.T) {
	if *update {
		if err := os.MkdirAll(fuzzSeedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		seeds := fuzzSeeds(t)
		for i, seed := range seeds {
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(seed)) + ")\n"
			writeFile(t, filepath.Join(fuzzSeedDir, fmt.Sprintf("seed-%02d", i)), []byte(body))
		}
	}
	entries, err := os.ReadDir(fuzzSeedDir)
	if err != nil || len(entries) < 10 {
		t.Fatalf("fuzz corpus has %d seeds (%v); run go test ./internal/engine -run FuzzSeeds -update", len(entries), err)
	}
}

func fuzzSeeds(t *testing.T) [][]byte {
	req := fixtureRequest(t)
	var seeds [][]byte
	scenarios := goldenScenarios(t)
	for _, name := range []string{"compacted", "pruned", "two-chunks", "second-generation", "openai-chat-render", "reported-usage-delta"} {
		seeds = append(seeds, fixtureJSON(t, scenarios[name], nil))
	}
	edits := []func(map[string]any){
		func(m map[string]any) { m["v"] = int64(2) },
		func(m map[string]any) { delete(m, "events"); m["events_object"] = "lane" },
		func(m map[string]any) { m["events"].([]any)[0].(map[string]any)["tool"] = map[string]any{"calls": "x"} },
		func(m map[string]any) {
			m["model_profile"] = map[string]any{"context_limit_kind": "shared_input_output"}
		},
		func(m map[string]any) { m["policy"] = map[string]any{"maximum_hierarchical_summary_calls": int64(1)} },
		func(m map[string]any) {
			m["trigger"] = "auto"
			m["anti_thrash"] = map[string]any{"cancellation_pending": true}
		},
		func(m map[string]any) {
			m["accounting"] = map[string]any{"category_bytes": map[string]any{"system": int64(9)}}
		},
		func(m map[string]any) { m["rendered_request_bytes"] = nil; m["render"] = "openai_chat_v1" },
	}
	for _, edit := range edits {
		seeds = append(seeds, fixtureJSON(t, req, edit))
	}
	return append(seeds, []byte(`{"v":1,"request_id":"r"}`), []byte(`{"v":1.0}`), []byte("\xff"))
}
