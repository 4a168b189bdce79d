package canonical_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
)

// The reference implementations under examples/ build a request by hand,
// hashes included. The engine must accept it and compact it, as
// `processor compact` would, and both languages must build the same request.
func TestReferenceRequests(t *testing.T) {
	builders := []struct {
		name string
		tool string
		args []string
	}{
		{"python", "python3", []string{"../examples/python/make_request.py"}},
		{"js", "node", []string{"../examples/js/make-request.mjs"}},
	}
	var encoded [][]byte
	for _, b := range builders {
		t.Run(b.name, func(t *testing.T) {
			path, err := exec.LookPath(b.tool)
			if err != nil {
				t.Skipf("%s is not installed", b.tool)
			}
			out := filepath.Join(t.TempDir(), "request.json")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, path, append(b.args, out)...)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cmd, err, msg)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			encoded = append(encoded, compactRequest(t, data))
		})
	}
	if len(encoded) == 2 && !bytes.Equal(encoded[0], encoded[1]) {
		t.Errorf("python and js build different requests:\n%s\n%s", encoded[0], encoded[1])
	}
}

// compactRequest decodes and compacts a request, requiring a checkpoint,
// and returns the request's canonical encoding.
func compactRequest(t *testing.T, data []byte) []byte {
	t.Helper()
	req, err := engine.DecodeRequest(data)
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	res, err := engine.Compact(context.Background(), req, offline.New(offline.DefaultOptions()), time.Now())
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if res.Status != events.StatusCompacted {
		t.Errorf("status %s, want %s", res.Status, events.StatusCompacted)
	}
	v, err := canonical.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := canonical.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}
