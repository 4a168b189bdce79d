package facts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestJobAppendJSONMatchesMarshal(t *testing.T) {
	long := strings.Repeat("detail of the investigation <into> the \"flaky\" test & more\n", 40)
	jobs := []Job{
		{},
		{V: 1, ConversationID: "thread-1", HeadEntryID: "cp-1", EntryIDs: []string{}, Scope: Scope{Kind: "thread", ID: "t"}},
		{V: 1, ConversationID: "thr\u2028ead", HeadEntryID: "c<p>", EntryIDs: []string{"e1", "e\"2"}, Scope: Scope{Kind: "user", ID: "é"}, Transcript: long},
		{V: 1, ConversationID: "x", Entries: []Entry{{ID: "e1", Role: "user", Content: "hi", ToolName: "t"}}},
	}
	var entries []Entry
	for i := range 24 {
		entries = append(entries, Entry{ID: fmt.Sprintf("e%03d", i), Role: []string{"user", "assistant", "tool"}[i%3], Content: fmt.Sprintf("turn %d: password=hunter%d\tand <b>bold</b>\x01 ", i, i) + long[:i*37], ToolName: "grep"})
	}
	jobs = append(jobs, BuildJob("thread-9", "cp-9", Scope{Kind: "thread", ID: "thread-9"}, entries))
	for i, j := range jobs {
		want, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.AppendJSON([]byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "x"+string(want) {
			t.Errorf("job %d:\n got %s\nwant x%s", i, got, want)
		}
	}
}
