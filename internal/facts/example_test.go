package facts_test

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn/internal/facts"
)

// The processor builds a job from the entries a compaction cut and enqueues
// it with the job's message id; the worker's heuristic extractor keeps the
// user's standing rules.
func ExampleBuildJob() {
	job := facts.BuildJob("conv-7", "ckpt-42", facts.Scope{Kind: "user", ID: "alice"}, []facts.Entry{
		{ID: "e1", Role: "user", Content: "Remember that staging is read-only.\nLet's look at the logs."},
		{ID: "e2", Role: "tool", ToolName: "bash", Content: "$ tail app.log\nERROR timeout"},
	})
	fmt.Println(job.MsgID())
	fmt.Println(job.Transcript)
	ext, _ := facts.Heuristic{}.Extract(context.Background(), job)
	for _, c := range ext.Candidates {
		fmt.Printf("%s fact: %s (%s)\n", c.Kind, c.Title, c.Rule)
	}
	// Output:
	// harvest:conv-7:ckpt-42
	// user: Remember that staging is read-only.
	//   Let's look at the logs.
	// tool(bash): $ tail app.log
	//   ERROR timeout
	// constraint fact: Staging is read-only (constraint/forbidden)
}
