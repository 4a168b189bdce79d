package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

var update = flag.Bool("update", false, "rewrite golden files, fuzz seeds and examples")

const goldenDir = "testdata/golden"

// goldenScenarios are the requests of the golden tests, by file name. They
// are written to testdata/golden/*.request.json with -update; the test then
// reads those files, so the committed files are the scenario.
func goldenScenarios(t *testing.T) map[string]*Request {
	compacted := fixtureRequest(t)

	skipped := fixtureRequest(t)
	skipped.Trigger = events.TriggerAuto
	skipped.RenderedRequestBytes = ptr(int64(5))

	pruned := fixtureRequest(t)
	pruned.Policy.MinimumPruneReclaimTokens = 100

	chunks := twoChunkRequest(t)

	first, err := Compact(context.Background(), fixtureRequest(t), extractive{}, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	second := secondGenerationWithPrefix(t, first)

	chat := fixtureRequest(t)
	chat.Render = RenderOpenAIChatV1
	chat.RenderedRequestBytes = nil
	chat.Focus = ptr("keep the test plan")

	tokenizer := fixtureRequest(t)
	tokenizer.ModelProfile.Tokenizer = ptr("o200k_base")
	tokenizer.Accounting = events.Accounting{Method: events.MethodLocalTokenizer, ProfileHash: ptr(hashB)}
	tokenizer.RenderedRequestBytes = nil
	tokenizer.Events[3] = event(t, 4, events.RoleAssistant, strings.Repeat("reading the code base ", 900))

	delta := fixtureRequest(t)
	delta.Accounting = events.Accounting{
		ReportedUsageBaseline: baselineV2(17_000, map[string]any{"system": exact(100, hashA), "history": appendOf(item("m1", 50, hashB))}),
		ComponentDescriptors:  map[string]any{"system": exact(100, hashA), "history": appendOf(item("m1", 50, hashB), item("m2", 25, hashC))},
	}

	missing := fixtureRequest(t)
	missing.Events[1] = event(t, 2, events.RoleTool, strings.Repeat("t", 6000), withTool(map[string]any{"call_id": "call-1", "name": "test"}))

	native := fixtureRequest(t)
	native.Policy.Mode = events.ModeNative

	return map[string]*Request{
		"compacted": compacted, "skipped-below-trigger": skipped, "pruned": pruned, "two-chunks": chunks,
		"second-generation": second, "openai-chat-render": chat, "local-tokenizer": tokenizer,
		"reported-usage-delta": delta, "error-missing-artifact": missing, "error-native-mode": native,
	}
}

// outcome is what `processor compact` would print for a request.
func outcome(data []byte) map[string]any {
	req, err := DecodeRequest(data)
	if err == nil {
		var res *Result
		if res, err = Compact(context.Background(), req, extractive{}, fixedNow); err == nil {
			return res.Map()
		}
	}
	e := errcode.As(err)
	if e == nil {
		e = errcode.Wrap(errcode.Internal, err.Error(), err)
	}
	return map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": e.Details}}
}

func indented(t testing.TB, v any) []byte {
	t.Helper()
	b, err := canonical.Encode(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, req := range goldenScenarios(t) {
			writeFile(t, filepath.Join(goldenDir, name+".request.json"), indented(t, wireMap(req)))
		}
	}
	requests, _ := filepath.Glob(filepath.Join(goldenDir, "*.request.json"))
	sort.Strings(requests)
	if len(requests) < 10 {
		t.Fatalf("found %d golden requests; run go test ./internal/engine -run Golden -update", len(requests))
	}
	for _, path := range requests {
		name := strings.TrimSuffix(filepath.Base(path), ".request.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := indented(t, outcome(data))
			resultPath := filepath.Join(goldenDir, name+".result.json")
			if *update {
				writeFile(t, resultPath, got)
			}
			want, err := os.ReadFile(resultPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("result differs from %s (run with -update if the change is intended):\n%s", resultPath, got)
			}
		})
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The golden and example request files are exactly what their scenarios
// build, so the wire form the tests write (wireMap, by the json tags)
// cannot drift from the files without -update.
func TestRequestFilesAreWhatTheScenariosBuild(t *testing.T) {
	files := map[string]*Request{}
	for name, req := range goldenScenarios(t) {
		files[filepath.Join(goldenDir, name+".request.json")] = req
	}
	for name, req := range exampleRequests(t) {
		files[filepath.Join(examplesDir, name)] = req
	}
	for path, req := range files {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := indented(t, wireMap(req)); !bytes.Equal(got, want) {
			t.Errorf("%s differs from what its scenario builds (run with -update if the change is intended)", path)
		}
	}
}
