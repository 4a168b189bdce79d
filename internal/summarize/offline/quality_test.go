package offline

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
	"github.com/cairnhq/cairn/internal/redact"
)

// Quality goals of the offline summarizer.
const (
	goalSurvival    = 0.95 // identifiers of the cut span found in checkpoint or tail
	goalCompression = 0.10 // semantic bytes / cut span bytes, lanes over 100 KB
	largeLaneBytes  = 100_000
)

// The identifier notion of the quality measure, written independently of the
// summarizer's scanner: URLs, file paths with an extension, backticked
// commands, issue numbers, commit hashes, UUIDs and versions.
var (
	reURL     = regexp.MustCompile("https?://[^\\s\"'<>()\\[\\]{}`]+")
	rePath    = regexp.MustCompile(`(?:\.{1,2}/|/)?(?:[\w@.+-]+/)*[\w@+-]+\.(?:go|mod|sum|py|js|ts|rs|md|json|ya?ml|toml|sql|proto|txt|sh)\b`)
	reCommand = regexp.MustCompile("`((?:go|git|make|npm|cargo|docker|kubectl|curl|python3?|pytest) [^`\\n]*)`")
	reIssue   = regexp.MustCompile(`#\d{3,}\b`)
	reHex     = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	reUUID    = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	reVersion = regexp.MustCompile(`\b(?:v\d+\.\d+(?:\.\d+)?|go1\.\d+(?:\.\d+)?)\b`)
	reHasNum  = regexp.MustCompile(`\d`)
	reHasHexL = regexp.MustCompile(`[a-f]`)
)

// measuredIdentifiers returns the identifiers in text, skipping secrets.
func measuredIdentifiers(text string) []string {
	secrets := redact.Find(text)
	inSecret := func(loc []int) bool {
		for _, s := range secrets {
			if loc[0] < s.End && loc[1] > s.Start {
				return true
			}
		}
		return false
	}
	var out []string
	add := func(re *regexp.Regexp, s string, group int, keep func(string) bool) {
		for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
			id := s[loc[2*group]:loc[2*group+1]]
			if !inSecret(loc) && (keep == nil || keep(id)) {
				out = append(out, id)
			}
		}
	}
	add(reURL, text, 0, nil)
	for i := range out {
		out[i] = strings.TrimRight(out[i], ".,;:!?")
	}
	// Paths and ids inside URLs are counted with the URL.
	rest := reURL.ReplaceAllStringFunc(text, func(u string) string { return strings.Repeat(" ", len(u)) })
	add(rePath, rest, 0, nil)
	add(reCommand, rest, 1, nil)
	add(reIssue, rest, 0, nil)
	add(reUUID, rest, 0, nil)
	add(reHex, rest, 0, func(s string) bool { return reHasNum.MatchString(s) && reHasHexL.MatchString(s) })
	add(reVersion, rest, 0, nil)
	return out
}

// readable is an event's text plus its call arguments, as a reader of the
// event sees it.
func readable(e engine.EventView) string {
	var b strings.Builder
	b.WriteString(eventText(&e))
	for _, c := range toolCalls(e.Tool) {
		switch args := c.arguments.(type) {
		case string:
			b.WriteString("\n" + args)
		case map[string]any:
			data, _ := json.Marshal(args)
			b.Write(append([]byte{'\n'}, data...))
		}
	}
	return b.String()
}

// semanticText is every string of the semantic, decoded.
func semanticText(t testing.TB, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(generic)
	return b.String()
}

// quality is the measure of one compaction.
type quality struct {
	identifiers, survived int
	cutBytes, projected   int
	semanticBytes         int
	lost                  []string
}

func (q quality) survival() float64 {
	if q.identifiers == 0 {
		return 1
	}
	return float64(q.survived) / float64(q.identifiers)
}

func (q quality) compression() float64 { return float64(q.semanticBytes) / float64(q.cutBytes) }

// measure compares the cut span of req (the events not retained) with the
// checkpoint semantic and the retained tail of res.
func measure(t testing.TB, req *engine.Request, res *engine.Result) quality {
	t.Helper()
	sem := semanticOf(t, res)
	retained := map[string]bool{}
	var kept strings.Builder
	kept.WriteString(semanticText(t, sem))
	for _, e := range res.RetainedEvents {
		retained[e.EventID] = true
		kept.WriteString(readable(engine.View(e)))
	}
	have := kept.String()
	var q quality
	seen := map[string]bool{}
	for _, e := range req.Events {
		if retained[e.EventID] {
			continue
		}
		size, err := canonical.EncodedSize(engine.View(e))
		if err != nil {
			t.Fatal(err)
		}
		q.cutBytes += size
		v := project(engine.View(e))
		psize, _ := canonical.EncodedSize(v)
		q.projected += psize
		for _, id := range measuredIdentifiers(readable(v)) {
			if seen[id] {
				continue
			}
			seen[id] = true
			q.identifiers++
			if strings.Contains(have, id) {
				q.survived++
			} else {
				q.lost = append(q.lost, id)
			}
		}
	}
	n, err := canonical.EncodedSize(sem.Map())
	if err != nil {
		t.Fatal(err)
	}
	q.semanticBytes = n
	return q
}

func TestQualityOnGeneratedLanes(t *testing.T) {
	var total quality
	for _, c := range []struct {
		events int
		seed   uint64
	}{{150, 1}, {150, 2}, {300, 3}, {600, 4}, {1000, 5}, {2000, 6}} {
		req, res, _ := compact(t, lanegen.RequestOptions{Lane: lanegen.Options{Events: c.events, Seed: c.seed}})
		q := measure(t, req, res)
		t.Logf("%4d events: %4d identifiers, survival %.3f, compression %.4f (semantic %6d B / cut %8d B; %.4f of the projected cut %8d B)",
			c.events, q.identifiers, q.survival(), q.compression(), q.semanticBytes, q.cutBytes, float64(q.semanticBytes)/float64(q.projected), q.projected)
		if q.cutBytes < largeLaneBytes {
			t.Fatalf("%d events: cut span only %d bytes; the quality goal needs lanes over 100 KB", c.events, q.cutBytes)
		}
		if q.survival() < goalSurvival {
			t.Errorf("%d events: identifier survival %.3f < %.2f; lost %q", c.events, q.survival(), goalSurvival, q.lost)
		}
		if q.compression() > goalCompression {
			t.Errorf("%d events: compression %.4f > %.2f", c.events, q.compression(), goalCompression)
		}
		total.identifiers += q.identifiers
		total.survived += q.survived
	}
	t.Logf("all lanes: survival %.3f over %d identifiers", total.survival(), total.identifiers)
}

// TestQualityOnExamples measures the example lanes the repository ships (a
// Request v1 document or a bare events array each); the compression goal
// applies to cut spans over 100 KB.
func TestQualityOnExamples(t *testing.T) {
	for _, name := range []string{"coding-agent-lane.json", "small-lane.json"} {
		t.Run(name, func(t *testing.T) { exampleQuality(t, name) })
	}
}

// exampleRequest reads examples/<name>, a Request v1 document or a bare
// events array, as a request; it skips the test when the file is absent.
func exampleRequest(t *testing.T, name string) *engine.Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", name))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("examples/%s is not in the repository", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	if trimmed := strings.TrimSpace(string(data)); strings.HasPrefix(trimmed, "[") {
		var lane []events.InputEvent
		if err := json.Unmarshal(data, &lane); err != nil {
			t.Fatal(err)
		}
		data = lanegen.RequestJSON(lanegen.RequestOptions{Events: lane})
	}
	req, err := engine.DecodeRequest(data)
	if err != nil {
		t.Fatalf("example request rejected: %v", err)
	}
	return req
}

func exampleQuality(t *testing.T, name string) {
	req := exampleRequest(t, name)
	rec := &recording{s: New(DefaultOptions())}
	res, err := engine.Compact(t.Context(), req, rec, now)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	if res.Status == "pruned" && rec.calls == 0 {
		t.Skipf("%s is pruned without a summary: nothing to measure", name)
	}
	if res.Status != "compacted" || rec.repairs != 0 {
		t.Fatalf("status %s with %d repairs", res.Status, rec.repairs)
	}
	q := measure(t, req, res)
	t.Logf("%s: %d events, %d identifiers, survival %.3f, compression %.4f (semantic %d B / cut %d B)",
		name, len(req.Events), q.identifiers, q.survival(), q.compression(), q.semanticBytes, q.cutBytes)
	if q.survival() < goalSurvival {
		t.Errorf("survival %.3f < %.2f; lost %q", q.survival(), goalSurvival, q.lost)
	}
	if q.cutBytes > largeLaneBytes && q.compression() > goalCompression {
		t.Errorf("compression %.4f > %.2f", q.compression(), goalCompression)
	}
}
