package semantic_test

import (
	"fmt"

	"github.com/cairnhq/cairn/semantic"
)

// A summarizer's JSON output is parsed, then checked against the events it
// summarizes before it may become a checkpoint.
func Example() {
	output := []byte(`{"version":1,
	  "objective":[{"text":"add retries","source_event_ids":["e1"]}],
	  "user_requests":[{"source_event_id":"e1","exact_excerpt":"add retries","secret_omission":null,"status":"active"}],
	  "constraints":[],"decisions":[],
	  "progress":{"completed":[],"active":[],"blocked":[],"pending":[]},
	  "critical_context":[],"errors":[],"artifact_refs":[],
	  "coverage":{"first_chat_seq":1,"last_chat_seq":2}}`)
	s, err := semantic.ParseJSON(output)
	if err != nil {
		fmt.Println(err)
		return
	}
	content := "please add retries to the client"
	err = semantic.Validate(s, semantic.Sources{
		Events: []semantic.SourceEvent{
			{EventID: "e1", Role: "user", Content: &content, ChatSeq: 1},
			{EventID: "e2", Role: "assistant", ChatSeq: 2},
		},
		Coverage: semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 2},
	})
	fmt.Println("valid:", err == nil)
	hash, _ := s.Hash()
	fmt.Println("hash length:", len(hash))
	// Output:
	// valid: true
	// hash length: 64
}

// A candidate that cites an event outside its sources is rejected with a
// typed error naming the unknown ids.
func ExampleValidate() {
	s := &semantic.Semantic{
		Version:   1,
		Objective: []semantic.Sourced{{Text: "add retries", SourceEventIDs: []string{"e9"}}},
		Coverage:  semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 1},
	}
	err := semantic.Validate(s, semantic.Sources{
		Events:   []semantic.SourceEvent{{EventID: "e1", Role: "user", ChatSeq: 1}},
		Coverage: semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 1},
	})
	fmt.Println(err)
	// Output:
	// invalid_compaction_semantic: semantic cites unknown source events
}
