package lanes_test

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/lanes"
)

// A lane's key is valid in a KV bucket whatever its identifiers contain,
// and reversible.
func ExampleLane_Key() {
	lane := lanes.Lane{RunAgentID: "agent/7", CheckpointNamespace: "main"}
	key, _ := lane.Key()
	back, _ := lanes.ParseKey(key)
	fmt.Println(key, back == lane)
	// Output: YWdlbnQvNw.bWFpbg true
}
