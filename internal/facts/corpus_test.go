package facts

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/redact"
)

// corpusConversation is one labelled conversation of testdata/corpus: its
// entries, and labels naming sentences of them with what a harvest must do
// with each. Positive kinds (Kinds) must be stored; negative kinds
// (chatter, question, transient, injection, secret, tool_output) must not.
// Sentences without a label are negatives too.
type corpusConversation struct {
	Name    string        `json:"name"`
	Domain  string        `json:"domain"`
	Lang    string        `json:"lang"`
	Entries []Entry       `json:"entries"`
	Labels  []corpusLabel `json:"labels"`
}

type corpusLabel struct {
	Entry int    `json:"entry"`
	Text  string `json:"text"`
	Kind  string `json:"kind"`
}

func (l corpusLabel) positive() bool { return slices.Contains(positiveKinds, l.Kind) }

var positiveKinds = []string{KindPreference, KindDecision, KindConstraint, KindEnvironment, KindIdentity, KindNote}

// corpusFiles are the labelled corpus the quality test reads: every
// testdata/corpus/*.jsonl, or the file CAIRN_FACTS_CORPUS names (a
// held-out set of the same format).
func corpusFiles(t *testing.T) []string {
	if f := os.Getenv("CAIRN_FACTS_CORPUS"); f != "" {
		return []string{f}
	}
	files, err := filepath.Glob("testdata/corpus/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	return files
}

func loadCorpus(t *testing.T, paths []string) []corpusConversation {
	t.Helper()
	var out []corpusConversation
	for _, p := range paths {
		out = append(out, loadCorpusFile(t, p)...)
	}
	return out
}

func loadCorpusFile(t *testing.T, path string) []corpusConversation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusConversation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var c corpusConversation
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		for i, l := range c.Labels {
			if l.Entry < 0 || l.Entry >= len(c.Entries) || !strings.Contains(c.Entries[l.Entry].Content, l.Text) {
				t.Fatalf("%s: label %d is not text of entry %d: %q", c.Name, i, l.Entry, l.Text)
			}
		}
		for i := range c.Entries {
			c.Entries[i].ID = fmt.Sprintf("e%d", i)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// kindScore counts one kind's outcomes.
type kindScore struct{ tp, fp, fn, kindRight int }

// corpusResult is the heuristic's score on a corpus.
type corpusResult struct {
	byKind                          map[string]*kindScore // positives by labelled kind; fp by stored kind
	wrongNegatives                  map[string]int        // stored facts by the negative label they match
	missedBecause                   map[string]int        // missed positives by why the heuristic skipped them
	tp, fp, fn, leaks, toolFacts    int
	conversations, labels, positive int
}

func (r corpusResult) precision() float64 { return ratio(r.tp, r.tp+r.fp) }
func (r corpusResult) recall() float64    { return ratio(r.tp, r.tp+r.fn) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// scoreCorpus harvests each conversation as one job, through extraction,
// sanitizing, redaction, dedupe and the default facts bound, and matches
// the stored facts against the labels.
func scoreCorpus(t *testing.T, convs []corpusConversation) corpusResult {
	r := corpusResult{byKind: map[string]*kindScore{}, wrongNegatives: map[string]int{}, missedBecause: map[string]int{}, conversations: len(convs)}
	for _, k := range positiveKinds {
		r.byKind[k] = &kindScore{}
	}
	for i, c := range convs {
		job := Job{V: PointerJobVersion, ConversationID: "conv-" + c.Name, HeadEntryID: fmt.Sprintf("ckpt-%03d", i),
			Scope: Scope{Kind: "thread", ID: c.Name}, Entries: c.Entries, RequestSeq: 1}
		ext, err := Heuristic{}.Extract(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := choose(ext.Candidates, nil, job, DefaultConfig().MaxFacts)
		matched := make([]bool, len(c.Labels))
		r.labels += len(c.Labels)
		for _, f := range stored {
			lis := matchLabels(c, f.Body)
			positive := false
			for _, li := range lis {
				if !c.Labels[li].positive() {
					continue
				}
				positive = true
				if !matched[li] {
					r.tp++
					matched[li] = true
					ks := r.byKind[c.Labels[li].Kind]
					ks.tp++
					if f.Kind == c.Labels[li].Kind {
						ks.kindRight++
					}
				}
			}
			switch {
			case positive:
			case len(lis) > 0:
				r.fp++
				r.byKind[f.Kind].fp++
				r.wrongNegatives[c.Labels[lis[0]].Kind]++
				t.Logf("%s: stored a %s line as %s: %q", c.Name, c.Labels[lis[0]].Kind, f.Kind, f.Body)
			default:
				r.fp++
				r.byKind[f.Kind].fp++
				r.wrongNegatives["unlabelled"]++
				t.Logf("%s: stored an unlabelled sentence as %s: %q", c.Name, f.Kind, f.Body)
			}
			r.leaks += leakedInto(t, c.Name, c.Entries, f)
			if inToolResult(c.Entries, f.Body) {
				r.toolFacts++
				t.Logf("%s: fact from a tool result: %q", c.Name, f.Body)
			}
		}
		for li, l := range c.Labels {
			if l.positive() {
				r.positive++
				if !matched[li] {
					r.fn++
					r.byKind[l.Kind].fn++
					why := skipReason(job.Entries[l.Entry], l.Text)
					r.missedBecause[why]++
					t.Logf("%s: missed %s (%s) %q", c.Name, l.Kind, why, l.Text)
				}
			}
		}
	}
	return r
}

// skipReason says why the heuristic left out a labelled sentence of e:
// the verdict of the statement that overlaps it, "assistant" etc., or
// "not_a_statement" when no statement overlaps it (data, or too short).
func skipReason(e Entry, label string) string {
	if e.Role != "user" && e.Role != "assistant" {
		return "role_" + e.Role
	}
	nl := normalize(label)
	for _, v := range Explain(e) {
		nv := normalize(v.Text)
		if strings.Contains(nl, nv) || strings.Contains(nv, nl) {
			if v.Kept {
				return "bound_or_dedupe"
			}
			return v.Skipped
		}
	}
	return "not_a_statement"
}

// matchLabels returns the labels a stored body states: each label whose
// text and the body, both redacted and normalized, hold one another (a
// label may be one clause of a stored sentence, or a whole line of which
// the body is a sentence). The positive ones come first.
func matchLabels(c corpusConversation, body string) []int {
	nb := normalize(body)
	var pos, neg []int
	for i, l := range c.Labels {
		text, _ := redact.String(l.Text)
		nl := normalize(text)
		if nl == "" || !(strings.Contains(nb, nl) || strings.Contains(nl, nb) && len(nb)*3 >= len(nl)) {
			continue
		}
		if l.positive() {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	return append(pos, neg...)
}

// inToolResult reports whether body is text of a tool entry and of no
// user or assistant entry.
func inToolResult(entries []Entry, body string) bool {
	inTool, inPerson := false, false
	for _, e := range entries {
		content, _ := redact.String(e.Content)
		if !strings.Contains(normalize(content), normalize(body)) {
			continue
		}
		if e.Role == "tool" {
			inTool = true
		} else {
			inPerson = true
		}
	}
	return inTool && !inPerson
}

// leakedInto counts the secrets of entries that appear in f.
func leakedInto(t *testing.T, name string, entries []Entry, f Fact) int {
	n := 0
	text := f.Title + "\n" + f.Body + "\n" + strings.Join(f.Topics, "\n")
	for _, e := range entries {
		for _, m := range redact.Find(e.Content) {
			if secret := e.Content[m.Start:m.End]; len(secret) >= 6 && strings.Contains(text, secret) {
				t.Logf("%s: fact holds %s %q", name, m.Class, secret)
				n++
			}
		}
	}
	if redact.Contains(text) {
		t.Logf("%s: fact holds a detectable secret: %q", name, text)
		n++
	}
	return n
}

// Goals of the default extractor on a labelled corpus.
const (
	minCorpusRecall    = 0.7
	minCorpusPrecision = 0.9
)

// TestHeuristicCorpus measures the heuristic extractor on the labelled
// corpus and prints precision and recall per kind. It fails below the
// goals, and on any secret, tool-result line or injected instruction
// stored as a fact.
func TestHeuristicCorpus(t *testing.T) {
	paths := corpusFiles(t)
	convs := loadCorpus(t, paths)
	r := scoreCorpus(t, convs)
	if os.Getenv("CAIRN_FACTS_CORPUS") == "" && (r.conversations < 12 || r.labels < 200) {
		t.Fatalf("the corpus has %d conversations and %d labels; it needs at least 12 and 200", r.conversations, r.labels)
	}
	t.Logf("corpus %s: %d conversations, %d labels, %d positives", paths, r.conversations, r.labels, r.positive)
	t.Logf("%-12s %6s %6s %6s %9s %7s %s", "kind", "stored", "missed", "wrong", "precision", "recall", "kind right")
	for _, k := range positiveKinds {
		ks := r.byKind[k]
		t.Logf("%-12s %6d %6d %6d %9.3f %7.3f %d/%d", k, ks.tp, ks.fn, ks.fp, ratio(ks.tp, ks.tp+ks.fp), ratio(ks.tp, ks.tp+ks.fn), ks.kindRight, ks.tp)
	}
	t.Logf("wrongly stored, by what the line was: %v", r.wrongNegatives)
	t.Logf("missed, by why: %v", r.missedBecause)
	t.Logf("all kinds: precision %.3f, recall %.3f (%d stored right, %d wrong, %d missed); secrets leaked %d, tool-result facts %d, injections stored %d",
		r.precision(), r.recall(), r.tp, r.fp, r.fn, r.leaks, r.toolFacts, r.wrongNegatives["injection"])
	if r.recall() < minCorpusRecall {
		t.Errorf("recall %.3f < %.2f", r.recall(), minCorpusRecall)
	}
	if r.precision() < minCorpusPrecision {
		t.Errorf("precision %.3f < %.2f", r.precision(), minCorpusPrecision)
	}
	if r.leaks != 0 || r.toolFacts != 0 || r.wrongNegatives["injection"] != 0 || r.wrongNegatives["secret"] != 0 {
		t.Errorf("stored %d secrets, %d tool-result lines, %d injections and %d secret lines as facts",
			r.leaks, r.toolFacts, r.wrongNegatives["injection"], r.wrongNegatives["secret"])
	}
}
