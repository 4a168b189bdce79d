package consumer

import (
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/summarize/offline"
	"github.com/cairnhq/cairn/testenv"
)

// A pull waits to gather several requests only for a local summarizer,
// and then only while requests wait for a commit slot: a request for a
// remote model would spend the wait idle instead of calling the model.
func TestPullsGatherOnlyForALocalSummarizer(t *testing.T) {
	e := singleEnv(t)
	for _, tc := range []struct {
		name    string
		s       engine.Summarizer
		gathers bool
	}{
		{"offline (local)", offline.New(offline.DefaultOptions()), true},
		{"remote", &testSummarizer{}, false},
	} {
		p, err := New(testConfig(), Deps{JS: e.js, Stores: e.stores, Compactor: testCompactor{}, Summarizer: tc.s})
		if err != nil {
			t.Fatal(err)
		}
		busy := p.gatherWhen()
		if (busy != nil) != tc.gathers {
			t.Fatalf("%s: gathers = %v, want %v", tc.name, busy != nil, tc.gathers)
		}
		if busy == nil {
			continue
		}
		if busy() {
			t.Fatalf("%s: busy with no request waiting for a commit slot", tc.name)
		}
		p.commits = newCommitGate(1)
		if err := p.commits.enter(t.Context()); err != nil {
			t.Fatal(err)
		}
		waiting := make(chan error)
		go func() { waiting <- p.commits.enter(t.Context()) }()
		testenv.Eventually(t, waitLong, func() error {
			if !busy() {
				return fmt.Errorf("%s: not busy while a request waits for a commit slot", tc.name)
			}
			return nil
		})
		p.commits.leave()
		if err := <-waiting; err != nil {
			t.Fatal(err)
		}
	}
}
