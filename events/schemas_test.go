package events_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/events"
)

var update = flag.Bool("update", false, "rewrite schemas/ from the Go types")

const schemaDir = "../schemas"

// TestSchemasMatchTypes fails when a message type changed and schemas/ was
// not regenerated with `go test ./events -run Schemas -update`.
func TestSchemasMatchTypes(t *testing.T) {
	for file, schema := range events.Schemas() {
		want, err := json.MarshalIndent(schema, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		path := filepath.Join(schemaDir, file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with: go test ./events -run Schemas -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s drifted from the Go types; regenerate with: go test ./events -run Schemas -update", path)
		}
	}
}
