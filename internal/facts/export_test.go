package facts

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// BuildJob returns a transcript job (version 1) for one compaction: the
// transcript of the cut entries rendered by RenderTranscript. Entries are
// not copied into the job: the transcript is what workers read.
func BuildJob(conversationID, headEntryID string, scope Scope, entries []Entry) Job {
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return Job{
		V:              JobVersion,
		ConversationID: conversationID,
		HeadEntryID:    headEntryID,
		EntryIDs:       ids,
		Scope:          scope,
		Transcript:     RenderTranscript(entries),
	}
}

// DecodeScope reverses EncodeScope.
func DecodeScope(token string) (Scope, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Scope{}, fmt.Errorf("facts: scope token %q: %w", token, err)
	}
	kind, id, ok := strings.Cut(string(raw), "\x00")
	if !ok {
		return Scope{}, fmt.Errorf("facts: scope token %q has no separator", token)
	}
	return Scope{Kind: kind, ID: id}, nil
}
