package facts

import (
	"context"
	"regexp"
	"strings"
)

// Lister is the part of a Store the loader reads.
type Lister interface {
	List(ctx context.Context, scope Scope) ([]Fact, error)
}

var _ Lister = (*Store)(nil)

// Memory block delimiters. The harvest strips such blocks from transcripts,
// so memory loaded into a prompt is never harvested again.
const (
	memoryOpen  = "<agent_memory>"
	memoryClose = "</agent_memory>"
)

// memoryTag matches an opening or closing memory tag inside fact text, which
// must not be able to end the block early or open a nested one.
var memoryTag = regexp.MustCompile(`(?i)</?\s*agent_memory\s*>`)

// Render returns the memory of scope for the next conversation's system
// prompt: an <agent_memory> block with one line per fact, newest first. A
// compaction fact (low trust) shows its title only; a fact from a trusted
// source shows "title: body", or the body alone when it starts with the
// title. Facts that do not fit in maxBytes (the whole
// block included) are left out; when none fits, or the scope has no facts,
// Render returns "".
func Render(ctx context.Context, store Lister, scope Scope, maxBytes int) (string, error) {
	facts, err := store.List(ctx, scope)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	size := len(memoryOpen) + 1 + len(memoryClose)
	for _, f := range facts {
		line := memoryLine(f) + "\n"
		if size+len(line) > maxBytes {
			continue // a shorter, older line may still fit
		}
		if b.Len() == 0 {
			b.WriteString(memoryOpen + "\n")
		}
		b.WriteString(line)
		size += len(line)
	}
	if b.Len() == 0 {
		return "", nil
	}
	b.WriteString(memoryClose)
	return b.String(), nil
}

func memoryLine(f Fact) string {
	text := clean(f.Title)
	if f.Provenance != ProvenanceCompaction {
		text = factText(text, clean(f.Body))
	}
	return "- " + memoryTag.ReplaceAllString(text, "")
}

// factText joins a cleaned title and body as "title: body", or returns the
// body alone when it already says the title (and the title is most of it): the heuristic extractor's
// title is its body without a lead-in ("Remember that"), or cut short, and
// would otherwise be said twice. A missing body leaves the title.
func factText(title, body string) string {
	switch {
	case body == "":
		return title
	case strings.Contains(normalize(body), normalize(title)) && 2*len(title) >= len(body):
		return body
	}
	return title + ": " + body
}
