package facts

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/redact"
)

// qualityCase is one labelled conversation: its entries and the fact bodies
// (after redaction) a good harvest keeps from it.
type qualityCase struct {
	Name     string   `json:"name"`
	Entries  []Entry  `json:"entries"`
	Expected []string `json:"expected"`
}

func loadQuality(t *testing.T) []qualityCase {
	t.Helper()
	f, err := os.Open("testdata/quality/conversations.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []qualityCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var c qualityCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHeuristicQuality measures the heuristic extractor, through the whole
// harvest pipeline (job rendering, extraction, sanitizing, redaction,
// dedupe), against the labelled conversations.
func TestHeuristicQuality(t *testing.T) {
	cases := loadQuality(t)
	if len(cases) < 30 {
		t.Fatalf("only %d labelled conversations", len(cases))
	}
	var tp, fp, fn, leaks int
	for i, c := range cases {
		for j := range c.Entries {
			c.Entries[j].ID = fmt.Sprintf("e%d", j)
		}
		job := BuildJob("conv-"+c.Name, fmt.Sprintf("ckpt-%03d", i), Scope{Kind: "thread", ID: c.Name}, c.Entries)
		ext, err := Heuristic{}.Extract(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		facts, _ := choose(ext.Candidates, nil, job, DefaultConfig().MaxFacts)

		want := map[string]bool{}
		for _, body := range c.Expected {
			want[normalize(body)] = true
		}
		got := map[string]bool{}
		for _, f := range facts {
			got[normalize(f.Body)] = true
			if want[normalize(f.Body)] {
				tp++
			} else {
				fp++
				t.Logf("%s: extra fact %q", c.Name, f.Body)
			}
			leaks += leaked(t, c, f)
		}
		for body := range want {
			if !got[body] {
				fn++
				t.Logf("%s: missed %q", c.Name, body)
			}
		}
	}
	precision := float64(tp) / float64(max(tp+fp, 1))
	recall := float64(tp) / float64(max(tp+fn, 1))
	t.Logf("heuristic on %d conversations: %d true, %d false positives, %d missed: precision %.3f, recall %.3f, secrets leaked %d",
		len(cases), tp, fp, fn, precision, recall, leaks)
	if precision < 0.8 {
		t.Errorf("precision %.3f < 0.8", precision)
	}
	if leaks != 0 {
		t.Errorf("%d secrets leaked into facts", leaks)
	}
}

// leaked counts the secrets of the case's raw entries that appear in f.
func leaked(t *testing.T, c qualityCase, f Fact) int {
	n := 0
	text := f.Title + "\n" + f.Body
	for _, e := range c.Entries {
		for _, m := range redact.Find(e.Content) {
			if secret := e.Content[m.Start:m.End]; len(secret) >= 6 && strings.Contains(text, secret) {
				t.Logf("%s: fact holds %s %q", c.Name, m.Class, secret)
				n++
			}
		}
	}
	if redact.Contains(text) {
		t.Logf("%s: fact holds a detectable secret: %q", c.Name, text)
		n++
	}
	return n
}
