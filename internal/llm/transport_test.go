package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/testenv"
)

func TestLimitedBody(t *testing.T) {
	cases := []struct {
		body    string
		limit   int64
		wantErr error
	}{
		{"abcd", 4, nil},
		{"abc", 4, nil},
		{"abcde", 4, errResponseTooLarge},
		{"", 1, nil},
	}
	for _, tc := range cases {
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tc.body)), left: tc.limit}
		got, err := io.ReadAll(b)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%q limit %d: err = %v, want %v", tc.body, tc.limit, err, tc.wantErr)
		}
		if tc.wantErr == nil && string(got) != tc.body {
			t.Errorf("%q limit %d: read %q", tc.body, tc.limit, got)
		}
	}
}

// TestCompleteReusesConnectionsAcrossConcurrentCalls holds every call of a
// wave at the server until all have arrived, so each wave needs one
// connection per call; later waves must reuse them rather than open new
// ones (the standard library's default keeps only two idle per host).
func TestCompleteReusesConnectionsAcrossConcurrentCalls(t *testing.T) {
	const calls, waves = 32, 3
	f := testenv.OpenAI(t)
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	f.SetHandler(func(testenv.RecordedRequest) testenv.Reply {
		mu.Lock()
		wave := release
		if arrived++; arrived == calls {
			close(release)
			arrived, release = 0, make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-wave:
		case <-time.After(10 * time.Second): // a lost call must not hang the test
		}
		return testenv.ReplyJSON(map[string]any{"answer": 42}, testenv.Usage{PromptTokens: 1, CompletionTokens: 1})
	})
	c := newTestClient(t, f, func(cfg *Config) { cfg.IdleConns = calls })
	for range waves {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				if _, err := c.Complete(context.Background(), jsonRequest()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if got := f.Conns(); got > calls {
		t.Fatalf("%d waves of %d concurrent calls opened %d connections, want at most %d", waves, calls, got, calls)
	}
}

// roundTripperFunc lets a function serve as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A program that replaced http.DefaultTransport (with tracing, say) keeps
// it: the client neither panics nor bypasses it.
func TestPooledClientKeepsAReplacedDefaultTransport(t *testing.T) {
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	used := false
	http.DefaultTransport = roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		used = true
		return saved.RoundTrip(r)
	})
	f := testenv.OpenAI(t)
	f.Script(testenv.ReplyJSON(map[string]any{"answer": 42}, testenv.Usage{PromptTokens: 1, CompletionTokens: 1}))
	c := newTestClient(t, f, nil)
	if _, err := c.Complete(context.Background(), jsonRequest()); err != nil {
		t.Fatal(err)
	}
	if !used {
		t.Fatal("the replaced default transport was bypassed")
	}
}
