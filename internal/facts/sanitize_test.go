package facts

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cairnhq/cairn/errcode"
)

var testAWSKey = "AKIA" + "IOSFODNN7EXAMPLE"

func TestSanitizeBounds(t *testing.T) {
	var topics []string
	for i := range 12 {
		topics = append(topics, " Topic"+string(rune('A'+i%10))+" ")
	}
	topics = append(topics, strings.Repeat("长", 60))
	c := sanitize(Candidate{
		Title:  "Title\x00with\x07control\u200bchars " + strings.Repeat("t", 200),
		Body:   "line one\r\nline\ttwo\x1b[31m " + strings.Repeat("界", 1200),
		Topics: topics,
	})
	if strings.ContainsAny(c.Title, "\x00\x07\u200b") || strings.ContainsAny(c.Body, "\r\n\t\x1b") {
		t.Fatalf("control characters kept: %q / %q", c.Title, c.Body[:40])
	}
	if n := utf8.RuneCountInString(c.Title); n != MaxTitleRunes {
		t.Fatalf("title has %d runes", n)
	}
	if n := utf8.RuneCountInString(c.Body); n != MaxBodyRunes || !utf8.ValidString(c.Body) {
		t.Fatalf("body has %d runes", n)
	}
	if !strings.HasPrefix(c.Body, "line one line two[31m") {
		t.Fatalf("body = %q", c.Body[:30])
	}
	want := []string{"topica", "topicb", "topicc", "topicd", "topice", "topicf", "topicg", "topich"}
	if !reflect.DeepEqual(c.Topics, want) {
		t.Fatalf("topics = %v", c.Topics)
	}
	long := sanitize(Candidate{Body: "b", Topics: []string{strings.Repeat("长", 60), "长"}})
	if utf8.RuneCountInString(long.Topics[0]) != MaxTopicRunes || len(long.Topics) != 2 {
		t.Fatalf("long topic = %v", long.Topics)
	}
}

func TestSanitizeTitleFromBody(t *testing.T) {
	c := sanitize(Candidate{Body: "Remember the staging cluster lives in eu-west-1"})
	if c.Title != c.Body {
		t.Fatalf("title = %q", c.Title)
	}
}

func TestBodyHashNormalizes(t *testing.T) {
	if BodyHash("  Use   PNPM\tnot npm ") != BodyHash("use pnpm not npm") {
		t.Fatal("normalized bodies hash differently")
	}
	if BodyHash("use pnpm") == BodyHash("use npm") {
		t.Fatal("different bodies hash the same")
	}
}

func TestSamenessKeyLeavesOutTheLeadIn(t *testing.T) {
	for _, restated := range []string{"Noted: we deploy from main only.", "Decision recorded: We deploy from main only", "记住：we deploy from main only。"} {
		if SamenessKey(restated) != SamenessKey("We deploy from main only.") {
			t.Errorf("%q is not the same fact as its plain statement", restated)
		}
	}
	if SamenessKey("We deploy from main only.") == SamenessKey("We deploy from release branches only.") {
		t.Fatal("different facts share a key")
	}
}

func TestChoosePipeline(t *testing.T) {
	job := Job{ConversationID: "c1", HeadEntryID: "ckpt-1", Scope: Scope{Kind: "thread", ID: "c1"}}
	stored := Candidate{Title: "old", Body: "The database is Postgres 16"}
	existing := map[string]string{SamenessKey(stored.Body): "other-slug"}
	cands := []Candidate{
		{Title: "db", Body: "the  database is postgres 16"},                    // duplicate of a stored fact
		{Title: "key", Body: "Deploy key is " + testAWSKey + " for CI"},        // redacted, kept
		{Title: "only", Body: testAWSKey},                                      // only a secret: dropped
		{Title: "pnpm", Body: "Use pnpm for the web app"},                      // kept
		{Title: "pnpm again", Body: "USE PNPM for the web app"},                // duplicate within the job
		{Title: "pnpm noted", Body: "Noted: use pnpm for the web app."},        // a restatement of it
		{Title: "", Body: "   "},                                               // empty: dropped
		{Title: "secret sk-\x00proj-Xy7Qm2LkP9sVb3Nc8TzR4WdA1fGh6", Body: "x"}, // control char hides a key
	}
	facts, res := choose(cands, existing, job, 8)
	if res.Duplicates != 3 || res.Redacted != 3 {
		t.Fatalf("duplicates %d redacted %d", res.Duplicates, res.Redacted)
	}
	if len(facts) != 3 {
		t.Fatalf("facts = %+v", facts)
	}
	if facts[0].Body != "Deploy key is [REDACTED:aws_access_key] for CI" || facts[1].Body != "Use pnpm for the web app" {
		t.Fatalf("facts = %+v", facts)
	}
	if strings.Contains(facts[2].Title, "sk-proj") {
		t.Fatalf("title leaked a key: %q", facts[2].Title)
	}
	for _, f := range facts {
		if f.Provenance != "compaction" || f.Confidence != 0.3 || f.Pinned || f.Source != "conversation:c1#ckpt-1" ||
			f.BodySHA256 != BodyHash(f.Body) || f.Slug != Slug("ckpt-1", f.Title) || f.Topics == nil {
			t.Fatalf("fact fields: %+v", f)
		}
	}
	// The same candidates stored by an earlier run of this job are the same
	// notes, not duplicates.
	again := map[string]string{}
	for _, f := range facts {
		again[SamenessKey(f.Body)] = f.Slug
	}
	facts2, res2 := choose(cands, again, job, 8)
	if res2.Duplicates != 2 || len(facts2) != 4 { // the stored-elsewhere fact is no longer known here
		t.Fatalf("re-run: %d facts, %d duplicates", len(facts2), res2.Duplicates)
	}
}

func TestChooseMaxFacts(t *testing.T) {
	var cands []Candidate
	for i := range 20 {
		cands = append(cands, Candidate{Title: "t" + string(rune('a'+i)), Body: "body " + string(rune('a'+i))})
	}
	facts, _ := choose(cands, nil, Job{HeadEntryID: "h"}, 8)
	if len(facts) != 8 || facts[0].Title != "ta" || facts[7].Title != "th" {
		t.Fatalf("facts = %+v", facts)
	}
}

func TestSlugAndScopeEncoding(t *testing.T) {
	s1 := Slug("01HXYZ-Checkpoint.42", "Use pnpm")
	if s1 != Slug("01HXYZ-Checkpoint.42", "  use   PNPM ") {
		t.Fatal("slug depends on title formatting")
	}
	if s1 == Slug("01HXYZ-Checkpoint.42", "Use npm") || s1 == Slug("other", "Use pnpm") {
		t.Fatal("slug collision")
	}
	if !regexp.MustCompile(`^[a-z0-9]{1,12}-[0-9a-f]{8}-[0-9a-f]{10}$`).MatchString(s1) {
		t.Fatalf("slug %q", s1)
	}
	if !strings.HasPrefix(Slug("中文", "t"), "h-") {
		t.Fatalf("slug without latin prefix = %q", Slug("中文", "t"))
	}
	keyChars := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
	for _, sc := range []Scope{{Kind: "thread", ID: "c1"}, {Kind: "user", ID: "ali.ce@example.com/x y"}, {Kind: "租户", ID: "客户:1"}} {
		enc := EncodeScope(sc)
		if !keyChars.MatchString(enc) || strings.Contains(enc, ".") {
			t.Fatalf("EncodeScope(%v) = %q", sc, enc)
		}
		back, err := DecodeScope(enc)
		if err != nil || back != sc {
			t.Fatalf("DecodeScope(%q) = %v, %v", enc, back, err)
		}
	}
	if _, err := DecodeScope("!!"); err == nil {
		t.Fatal("bad token decoded")
	}
}

func TestParseScope(t *testing.T) {
	if s, err := ParseScope("user:alice:x"); err != nil || s != (Scope{Kind: "user", ID: "alice:x"}) {
		t.Fatalf("ParseScope = %v %v", s, err)
	}
	for _, bad := range []string{"user", ":x", "user:", ""} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
}

type named string

func (n named) Name() string { return string(n) }
func (n named) Extract(context.Context, Job) (Extraction, error) {
	return Extraction{}, nil
}

func TestRouter(t *testing.T) {
	r, err := NewRouter(nil,
		Route{Kind: "tenant", ID: "acme", Extractor: named("acme-model")},
		Route{Kind: "tenant", ID: "*", Extractor: named("tenant-model")},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[Scope]string{
		{Kind: "tenant", ID: "acme"}:  "acme-model",
		{Kind: "tenant", ID: "other"}: "tenant-model",
		{Kind: "thread", ID: "acme"}:  "heuristic",
	}
	for sc, want := range tests {
		if got := r.For(sc).Name(); got != want {
			t.Errorf("For(%v) = %s, want %s", sc, got, want)
		}
	}
	if _, err := NewRouter(nil, Route{Kind: "t", ID: "*", Extractor: named("a")}, Route{Kind: "t", ID: "*", Extractor: named("b")}); err == nil {
		t.Error("duplicate wildcard accepted")
	}
	if _, err := NewRouter(nil, Route{Kind: "t", ID: "x"}); err == nil {
		t.Error("route without extractor accepted")
	}
}

func TestParseRoutes(t *testing.T) {
	byName := map[string]Extractor{"model": named("model"), "heuristic": Heuristic{}}
	routes, err := ParseRoutes(" tenant:acme=model, user:*=heuristic ,", byName)
	if err != nil || len(routes) != 2 || routes[0].Kind != "tenant" || routes[0].ID != "acme" || routes[1].ID != "*" || routes[0].Extractor.Name() != "model" {
		t.Fatalf("ParseRoutes = %+v, %v", routes, err)
	}
	if r, err := ParseRoutes("", byName); err != nil || r != nil {
		t.Fatalf("empty = %v, %v", r, err)
	}
	for _, bad := range []string{"tenant:acme", "tenant=model", ":x=model", "tenant:acme=gpt"} {
		if _, err := ParseRoutes(bad, byName); err == nil {
			t.Errorf("ParseRoutes(%q) accepted", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Config){
		"workers":      func(c *Config) { c.Workers = 0 },
		"many workers": func(c *Config) { c.Workers = 65 },
		"ack pending":  func(c *Config) { c.MaxAckPending = c.Workers - 1 },
		"max facts":    func(c *Config) { c.MaxFacts = 0 },
		"ack wait":     func(c *Config) { c.AckWait = 0 },
		"timeout":      func(c *Config) { c.ExtractTimeout = time.Hour },
		"no retry":     func(c *Config) { c.Retry = nil },
		"long retry":   func(c *Config) { c.Retry = []time.Duration{2 * time.Hour} },
		"retries":      func(c *Config) { c.Retry = make([]time.Duration, MaxDeliver+1) },
		"pull wait":    func(c *Config) { c.PullWait = time.Millisecond },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFailedEventRedactsAndTypes(t *testing.T) {
	job := Job{ConversationID: "c", HeadEntryID: "h", Scope: Scope{Kind: "thread", ID: "c"}}
	ev := Failed(job, errors.New("upstream said password=hunter22"), time.Now())
	if ev.Error.Code != errcode.HarvestFailed || ev.Error.Retryable || strings.Contains(ev.Error.Message, "hunter22") || ev.EventID != "h:memory_failed" {
		t.Fatalf("Failed = %+v", ev)
	}
	typed := Failed(job, errcode.New(errcode.HarvestBadReply, "no JSON"), time.Now())
	if typed.Error.Code != errcode.HarvestBadReply || typed.Error.Details == nil {
		t.Fatalf("Failed = %+v", typed)
	}
}

type panickingExtractor struct{}

func (panickingExtractor) Name() string { return "panicky" }
func (panickingExtractor) Extract(context.Context, Job) (Extraction, error) {
	panic("extractor bug")
}

// An extractor that panics fails the harvest with harvest_failed, whose
// details carry the panic.
func TestPanickingExtractorNamesThePanic(t *testing.T) {
	_, err := safeExtract(context.Background(), panickingExtractor{}, Job{})
	e := errcode.As(err)
	if e == nil || e.Code != errcode.HarvestFailed || e.Details["panic"] != "extractor bug" {
		t.Fatalf("got %v, want harvest_failed naming the panic", err)
	}
}
