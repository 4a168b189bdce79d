package canonical_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
)

// The vectors of testdata/vectors.json are the portable statement of the
// encoding (docs/canonical-json.md): the Python and JavaScript reference
// implementations under examples/ check themselves against the same file.
// This test holds the file to the Go implementation, so a change on either
// side fails here instead of drifting apart.

var updateVectors = flag.Bool("update-vectors", false, "rewrite the expectations in testdata/vectors.json from this implementation")

const vectorsPath = "testdata/vectors.json"

type vectorFile struct {
	Description string             `json:"description"`
	Vectors     []vector           `json:"vectors"`
	Events      []eventVector      `json:"events"`
	Checkpoints []checkpointVector `json:"checkpoints"`
}

// vector is one JSON text and its canonical encoding and hash, or the error
// a strict decoder reports for it.
type vector struct {
	Name      string  `json:"name"`
	Input     *string `json:"input,omitempty"`
	InputHex  string  `json:"input_hex,omitempty"`
	Canonical string  `json:"canonical,omitempty"`
	SHA256    string  `json:"sha256,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// eventVector is a wire event with its hashes left out, and the hashes
// Cairn computes for it.
type eventVector struct {
	Name             string `json:"name"`
	Event            string `json:"event"`
	ContentPayload   string `json:"content_payload"`
	ContentHash      string `json:"content_hash"`
	Provenance       string `json:"provenance"`
	ProvenanceSHA256 string `json:"provenance_sha256"`
}

// checkpointVector is a checkpoint persistence map and its checkpoint_hash.
type checkpointVector struct {
	Name           string `json:"name"`
	Checkpoint     string `json:"checkpoint"`
	CheckpointHash string `json:"checkpoint_hash"`
}

// Error names a vector may expect.
const (
	errInvalidJSON  = "invalid_json"
	errDuplicateKey = "duplicate_key"
)

func TestVectors(t *testing.T) {
	f := readVectors(t)
	names := make(map[string]bool)
	for i := range f.Vectors {
		v := &f.Vectors[i]
		if names[v.Name] {
			t.Errorf("vector name %q is used twice", v.Name)
		}
		names[v.Name] = true
		t.Run(v.Name, func(t *testing.T) { checkVector(t, v) })
	}
	if *updateVectors {
		writeVectors(t, f)
	}
}

func TestVectorEvents(t *testing.T) {
	f := readVectors(t)
	if len(f.Events) == 0 {
		t.Fatal("no event vectors")
	}
	for i := range f.Events {
		v := &f.Events[i]
		t.Run(v.Name, func(t *testing.T) { checkEventVector(t, v) })
	}
	if *updateVectors {
		writeVectors(t, f)
	}
}

func TestVectorCheckpoints(t *testing.T) {
	f := readVectors(t)
	if len(f.Checkpoints) == 0 {
		t.Fatal("no checkpoint vectors")
	}
	for i := range f.Checkpoints {
		v := &f.Checkpoints[i]
		t.Run(v.Name, func(t *testing.T) { checkCheckpointVector(t, v) })
	}
	if *updateVectors {
		writeVectors(t, f)
	}
}

// TestVectorsCover keeps the vectors covering what the documentation
// promises they cover.
func TestVectorsCover(t *testing.T) {
	f := readVectors(t)
	inputs := make(map[string]bool)
	errs := make(map[string]int)
	for _, v := range f.Vectors {
		if v.Input != nil {
			inputs[*v.Input] = true
		}
		errs[v.Error]++
	}
	for c := range 0x20 {
		if in := fmt.Sprintf(`"a\u%04x b"`, c); !inputs[in] {
			t.Errorf("no vector for control character U+%04X (input %s)", c, in)
		}
	}
	for _, in := range []string{`1e-07`, `1e+21`, `-0.0`, `-0`, `5e-324`, `1e300`, `0.30000000000000004`,
		`9007199254740993`, `1e400`, `"\ud800"`, `"a\u007fb"`, `"a\u2028b\u2029c"`} {
		if !inputs[in] {
			t.Errorf("no vector with input %s", in)
		}
	}
	if errs[errInvalidJSON] == 0 || errs[errDuplicateKey] == 0 {
		t.Errorf("rejected vectors by error: %v; want both %s and %s", errs, errInvalidJSON, errDuplicateKey)
	}
}

func readVectors(t *testing.T) *vectorFile {
	t.Helper()
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f vectorFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", vectorsPath, err)
	}
	return &f
}

// writeVectors rewrites the file with one vector a line, so a change to
// one vector is a one-line diff.
func writeVectors(t *testing.T, f *vectorFile) {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("{\n\"description\": ")
	writeLine(t, &out, f.Description)
	writeList(t, &out, "vectors", f.Vectors, false)
	writeList(t, &out, "events", f.Events, false)
	writeList(t, &out, "checkpoints", f.Checkpoints, true)
	out.WriteString("}\n")
	if err := os.WriteFile(vectorsPath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeList[T any](t *testing.T, out *bytes.Buffer, name string, list []T, last bool) {
	t.Helper()
	out.WriteString(",\n\"" + name + "\": [\n")
	for i, v := range list {
		writeLine(t, out, v)
		if i < len(list)-1 {
			out.Truncate(out.Len() - 1)
			out.WriteString(",\n")
		}
	}
	out.WriteString("]")
	if last {
		out.WriteString("\n")
	}
}

func writeLine(t *testing.T, out *bytes.Buffer, v any) {
	t.Helper()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
}

func (v *vector) input(t *testing.T) []byte {
	t.Helper()
	switch {
	case v.Input != nil && v.InputHex == "":
		return []byte(*v.Input)
	case v.Input == nil && v.InputHex != "":
		b, err := hex.DecodeString(v.InputHex)
		if err != nil {
			t.Fatalf("input_hex: %v", err)
		}
		return b
	}
	t.Fatal("a vector needs exactly one of input and input_hex")
	return nil
}

func checkVector(t *testing.T, v *vector) {
	data := v.input(t)
	decoded, err := canonical.Decode(data)
	if *updateVectors {
		v.Canonical, v.SHA256, v.Error = "", "", errorName(err)
		if err == nil {
			enc, err := canonical.Encode(decoded)
			if err != nil {
				t.Fatal(err)
			}
			v.Canonical, v.SHA256 = string(enc), canonical.HashBytes(enc)
		}
		return
	}
	if v.Error != "" {
		if v.Canonical != "" || v.SHA256 != "" {
			t.Fatal("a rejected vector has no canonical encoding or hash")
		}
		if got := errorName(err); got != v.Error {
			t.Fatalf("Decode error = %v (%q), want %q", err, got, v.Error)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	enc, err := canonical.Encode(decoded)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if string(enc) != v.Canonical {
		t.Fatalf("canonical encoding\n got %s\nwant %s", enc, v.Canonical)
	}
	sum := sha256.Sum256([]byte(v.Canonical))
	if hex.EncodeToString(sum[:]) != v.SHA256 {
		t.Fatalf("sha256 %s is not the SHA-256 of the canonical encoding", v.SHA256)
	}
	if h, err := canonical.Hash(decoded); err != nil || h != v.SHA256 {
		t.Fatalf("Hash = %s, %v; want %s", h, err, v.SHA256)
	}
	// The canonical encoding is a fixed point.
	again, err := canonical.Decode(enc)
	if err != nil {
		t.Fatalf("Decode of the canonical encoding: %v", err)
	}
	if enc2, err := canonical.Encode(again); err != nil || !bytes.Equal(enc2, enc) {
		t.Fatalf("re-encoding gives %s, %v", enc2, err)
	}
}

// errorName classifies a Decode error as a vector names it.
func errorName(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, canonical.ErrDuplicateKey):
		return errDuplicateKey
	case errors.Is(err, canonical.ErrInvalidJSON):
		return errInvalidJSON
	}
	return "unclassified: " + err.Error()
}

func checkEventVector(t *testing.T, v *eventVector) {
	decoded, err := canonical.Decode([]byte(v.Event))
	if err != nil {
		t.Fatalf("event: %v", err)
	}
	m := decoded.(map[string]any)
	if _, ok := m["content_hash"]; ok {
		t.Fatal("an event vector leaves out content_hash, for Cairn to compute")
	}
	if _, ok := m["provenance_sha256"]; ok {
		t.Fatal("an event vector leaves out provenance_sha256, for Cairn to compute")
	}
	payload := mustEncode(t, contentPayload(m))
	provenance := mustEncode(t, m["provenance"])
	e, err := events.DecodeEvent(decoded)
	if err != nil {
		t.Fatalf("DecodeEvent: %v", err)
	}
	if *updateVectors {
		v.ContentPayload, v.ContentHash = payload, e.ContentHash
		v.Provenance, v.ProvenanceSHA256 = provenance, e.ProvenanceSHA256
		return
	}
	if payload != v.ContentPayload {
		t.Errorf("content payload\n got %s\nwant %s", payload, v.ContentPayload)
	}
	if provenance != v.Provenance {
		t.Errorf("provenance\n got %s\nwant %s", provenance, v.Provenance)
	}
	// The engine's hashes are the documented ones: of the payload and of
	// the provenance's canonical encoding.
	if e.ContentHash != v.ContentHash || canonical.HashBytes([]byte(v.ContentPayload)) != v.ContentHash {
		t.Errorf("content_hash: engine %s, payload %s, vector %s",
			e.ContentHash, canonical.HashBytes([]byte(v.ContentPayload)), v.ContentHash)
	}
	if e.ProvenanceSHA256 != v.ProvenanceSHA256 || canonical.HashBytes([]byte(v.Provenance)) != v.ProvenanceSHA256 {
		t.Errorf("provenance_sha256: engine %s, provenance %s, vector %s",
			e.ProvenanceSHA256, canonical.HashBytes([]byte(v.Provenance)), v.ProvenanceSHA256)
	}
	// An event carrying the hashes is accepted, and one with a wrong hash
	// is not.
	m["content_hash"], m["provenance_sha256"] = v.ContentHash, v.ProvenanceSHA256
	if _, err := events.DecodeEvent(m); err != nil {
		t.Errorf("event with the vector's hashes: %v", err)
	}
	m["content_hash"] = strings.Repeat("0", 64)
	if _, err := events.DecodeEvent(m); err == nil || !strings.Contains(err.Error(), "content hash does not match") {
		t.Errorf("event with a wrong content_hash: %v", err)
	}
}

// contentPayload is the object content_hash covers, with the defaults of
// fields an event leaves out.
func contentPayload(event map[string]any) map[string]any {
	p := map[string]any{"artifact_ids": []any{}, "content": nil, "tool": nil, "truncated": false}
	for k := range p {
		if v, ok := event[k]; ok && v != nil {
			p[k] = v
		}
	}
	return p
}

func mustEncode(t *testing.T, v any) string {
	t.Helper()
	b, err := canonical.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkCheckpointVector(t *testing.T, v *checkpointVector) {
	decoded, err := canonical.Decode([]byte(v.Checkpoint))
	if err != nil {
		t.Fatal(err)
	}
	m := decoded.(map[string]any)
	if _, ok := m["created_at"]; !ok {
		t.Fatal("a checkpoint vector has created_at, which its hash leaves out")
	}
	_, h, err := canonical.EncodeHashWithout(m, "created_at")
	if err != nil {
		t.Fatal(err)
	}
	if *updateVectors {
		v.CheckpointHash = h
		return
	}
	if h != v.CheckpointHash {
		t.Errorf("checkpoint_hash = %s, want %s", h, v.CheckpointHash)
	}
	delete(m, "created_at")
	if h2, err := canonical.Hash(m); err != nil || h2 != v.CheckpointHash {
		t.Errorf("Hash without created_at = %s, %v; want %s", h2, err, v.CheckpointHash)
	}
}
