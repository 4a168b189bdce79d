package consumer

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/outbox"
	"github.com/cairnhq/cairn/internal/topology"
)

// Transcript bounds of harvest.md, in characters (runes).
const (
	maxEntryRunes      = 1500
	maxTranscriptRunes = 24000
)

// harvestJob is the conversation.memory.harvest payload (harvest.md).
type harvestJob struct {
	V              int      `json:"v"`
	ConversationID string   `json:"conversation_id"`
	HeadEntryID    string   `json:"head_entry_id"`
	EntryIDs       []string `json:"entry_ids"`
	Scope          Scope    `json:"scope"`
	Transcript     string   `json:"transcript"`
}

// harvestMsgID is the job's message id: unique on (conversation_id,
// head_entry_id), so a repeated compaction of the same cut enqueues one job.
func harvestMsgID(conversationID, headEntryID string) string {
	return "harvest:" + conversationID + ":" + headEntryID
}

// transcriptEvent is the part of an InputEvent a transcript shows.
type transcriptEvent struct {
	EventID string         `json:"event_id"`
	Role    string         `json:"role"`
	Content *string        `json:"content"`
	Tool    map[string]any `json:"tool"`
}

// buildHarvestRecord renders the cut events (in original, unprojected form)
// into a redacted harvest job record.
func buildHarvestRecord(req *envelope, checkpointID string, events json.RawMessage, cutIDs []string, traceparent string) (outbox.Record, error) {
	var all []transcriptEvent
	if err := json.Unmarshal(events, &all); err != nil {
		return outbox.Record{}, errcode.Wrap(errcode.InvalidRequest, "events are not an array of objects", err)
	}
	cut := make(map[string]bool, len(cutIDs))
	for _, id := range cutIDs {
		cut[id] = true
	}
	var lines []string
	ids := []string{}
	for _, e := range all {
		if !cut[e.EventID] {
			continue
		}
		ids = append(ids, e.EventID)
		lines = append(lines, renderEntry(e))
	}
	job := harvestJob{
		V: 1, ConversationID: req.ThreadID, HeadEntryID: checkpointID, EntryIDs: ids,
		Scope: req.harvestScope(), Transcript: redact(keepNewest(lines, maxTranscriptRunes)),
	}
	return record(topology.SubjectHarvest, harvestMsgID(req.ThreadID, checkpointID), job, traceparent)
}

var agentMemory = regexp.MustCompile(`(?s)<agent_memory>.*?</agent_memory>`)

// renderEntry renders one entry as "role: content" (a tool entry shows its
// tool name), with injected memory removed and the entry cut to its bound.
func renderEntry(e transcriptEvent) string {
	role := e.Role
	if e.Role == "tool" {
		if name, ok := e.Tool["name"].(string); ok && name != "" {
			role = "tool " + name
		}
	}
	content := ""
	if e.Content != nil {
		content = *e.Content
	}
	content = strings.TrimSpace(agentMemory.ReplaceAllString(content, ""))
	return truncateRunes(role+": "+content, maxEntryRunes)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// keepNewest joins lines oldest to newest, dropping the oldest while the
// total exceeds limit runes; a single oversized newest line keeps its tail.
func keepNewest(lines []string, limit int) string {
	total, start := 0, len(lines)
	for start > 0 {
		n := utf8.RuneCountInString(lines[start-1]) + 1
		if total+n > limit {
			break
		}
		total += n
		start--
	}
	if start == len(lines) && len(lines) > 0 {
		r := []rune(lines[len(lines)-1])
		return string(r[max(len(r)-limit, 0):])
	}
	return strings.Join(lines[start:], "\n")
}

// secretPatterns are the secret classes of harvest.md, most specific first.
// hints are literal substrings (lower-case) at least one of which any match
// contains, so the regular expression only runs on text that may match.
var secretPatterns = []struct {
	class string
	hints []string
	re    *regexp.Regexp
}{
	{"private_key", []string{"private key-----"}, regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`)},
	{"anthropic_key", []string{"sk-ant-"}, regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`)},
	{"openai_key", []string{"sk-"}, regexp.MustCompile(`sk-(?:proj-)?[A-Za-z0-9_\-]{16,}`)},
	{"aws_access_key", []string{"akia", "asia"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b`)},
	{"slack_token", []string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`)},
	{"jwt", []string{"eyj"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
	{"url_password", []string{"://"}, regexp.MustCompile(`(?i)([a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(@)`)},
	{"assignment", []string{"password", "passwd", "secret", "token", "api_key", "apikey"}, regexp.MustCompile(`(?i)\b(password|passwd|secret|token|api_key|apikey)(\s*[=:]\s*)[^\s,;'"]+`)},
}

// redact replaces secrets with [REDACTED:<class>] so that no copy of a
// secret leaves the request stream.
func redact(s string) string {
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		if !containsAny(lower, p.hints) {
			continue
		}
		switch p.class {
		case "url_password":
			s = p.re.ReplaceAllString(s, "${1}[REDACTED:"+p.class+"]${2}")
		case "assignment":
			s = p.re.ReplaceAllString(s, "${1}${2}[REDACTED:secret]")
		default:
			s = p.re.ReplaceAllString(s, "[REDACTED:"+p.class+"]")
		}
		lower = strings.ToLower(s)
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
