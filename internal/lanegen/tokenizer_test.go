package lanegen

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
)

// A request naming a tokenizer is counted with it and keeps the window and
// thresholds of the lane in bytes, so the engine makes the plan it makes in
// bytes: the same outcome, and when compacted the same tail.
func TestTokenizerKeepsTheBytesPlan(t *testing.T) {
	for _, events := range []int{24, 100} {
		for seed := uint64(1); seed <= 12; seed++ {
			o := RequestOptions{Lane: Options{Events: events, Seed: seed}}
			inBytes, counted := Request(o), Request(RequestOptions{Lane: o.Lane, Tokenizer: "o200k_base"})
			if tok := counted.ModelProfile.Tokenizer; tok == nil || *tok != "o200k_base" {
				t.Fatalf("profile %+v names no tokenizer", counted.ModelProfile)
			}
			counted.ModelProfile.Tokenizer = nil
			if !reflect.DeepEqual(counted.ModelProfile, inBytes.ModelProfile) || !bytes.Equal(counted.Policy, inBytes.Policy) {
				t.Fatalf("%d events, seed %d: profile %+v policy %s, in bytes %+v %s", events, seed,
					counted.ModelProfile, counted.Policy, inBytes.ModelProfile, inBytes.Policy)
			}
			b, bErr := compactGenerated(t, o)
			o.Tokenizer = "o200k_base"
			c, cErr := compactGenerated(t, o)
			if errcode.Code(bErr) != errcode.Code(cErr) {
				t.Fatalf("%d events, seed %d: in bytes %v, with o200k_base %v", events, seed, bErr, cErr)
			}
			if bErr != nil {
				continue
			}
			if counter := c.Checkpoint.Map()["accounting_counter"]; counter != "o200k_base" {
				t.Fatalf("%d events, seed %d: counted with %v", events, seed, counter)
			}
			if c.Status != b.Status || c.RetainedEventCount != b.RetainedEventCount {
				t.Errorf("%d events, seed %d: o200k_base %s keeping %d, bytes %s keeping %d", events, seed, c.Status, c.RetainedEventCount, b.Status, b.RetainedEventCount)
			}
		}
	}
}

func compactGenerated(t *testing.T, o RequestOptions) (*engine.Result, error) {
	t.Helper()
	req, err := engine.DecodeRequest(RequestJSON(o))
	if err != nil {
		t.Fatal(err)
	}
	return engine.Compact(context.Background(), req, offline.New(offline.DefaultOptions()), time.Unix(1_800_000_000, 0))
}
