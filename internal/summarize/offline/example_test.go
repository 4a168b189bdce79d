package offline_test

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/semantic"
)

func Example() {
	text := func(s string) *string { return &s }
	events := []engine.EventView{
		{EventID: "0190f000-0000-7000-8000-000000000001", ChatSeq: 1, Role: "user",
			Content: text("Add retries to internal/store/kv.go. Never log the token.")},
		{EventID: "0190f000-0000-7000-8000-000000000002", ChatSeq: 2, Role: "assistant",
			Content: text("I'll use backoff/v4 because it honours ctx. Running `go test ./internal/store/...`.")},
	}
	s := offline.New(offline.DefaultOptions())
	got, err := s.Summarize(context.Background(), engine.Payload{
		SchemaVersion: engine.PayloadSchemaVersion,
		CoveredRange:  semantic.Coverage{FirstChatSeq: 1, LastChatSeq: 2},
		Events:        events,
	})
	if err != nil {
		panic(err)
	}
	out := got.Output.(*semantic.Semantic)
	fmt.Println("request:", *out.UserRequests[0].ExactExcerpt, "-", out.UserRequests[0].Status)
	fmt.Println("constraint:", out.Constraints[0].Text)
	fmt.Println("decision:", out.Decisions[0].Text, "-", *out.Decisions[0].Rationale)
	for _, c := range out.CriticalContext {
		fmt.Printf("%q\n", c.Text)
	}
	// Output:
	// request: Add retries to internal/store/kv.go. Never log the token. - active
	// constraint: Never log the token.
	// decision: I'll use backoff/v4 - it honours ctx
	// "Files:\ninternal/store/kv.go"
	// "Commands:\ngo test ./internal/store/..."
}
