package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/internal/lanegen"
)

// countingRequest is an automatic request for a lane of n generated
// events, counted with o200k_base, in a window so large that the engine
// skips it after measuring: it then counts each event's view exactly once,
// so a cache given to it ends up holding min(n, capacity) entries.
func countingRequest(t testing.TB, n int) *engine.Request {
	t.Helper()
	r := lanegen.Request(lanegen.RequestOptions{Lane: lanegen.Options{Events: n, Seed: 11}, Trigger: "auto"})
	tokenizer, window := "o200k_base", int64(1<<40)
	r.ModelProfile.Tokenizer, r.ModelProfile.MaxInputTokens = &tokenizer, &window
	req, err := engine.DecodeRequest(lanegen.Encode(r))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// retainedBytes is the heap a cache keeps once fill has put its entries
// in it and everything else fill allocated is garbage.
func retainedBytes(t testing.TB, cache *engine.CountCache, fill func(*engine.CountCache)) uint64 {
	t.Helper()
	compactInto(t, 50)(nil) // loads the vocabulary and whatever else is kept once per process
	var before, after runtime.MemStats
	settle := func(m *runtime.MemStats) {
		runtime.GC() // twice: the first only moves sync.Pool buffers to the victim cache
		runtime.GC()
		runtime.ReadMemStats(m)
	}
	settle(&before)
	fill(cache)
	settle(&after)
	runtime.KeepAlive(cache)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

func compactInto(t testing.TB, events int) func(*engine.CountCache) {
	return func(cache *engine.CountCache) {
		res, err := engine.CompactCounting(context.Background(), countingRequest(t, events), &planSummarizer{}, time.Now(), cache)
		if err != nil || res.Status != engine.StatusSkipped {
			t.Fatalf("compaction: %v, %+v", err, res)
		}
	}
}

// cacheHelperEnv, when set, makes TestTokenCacheHelper measure a cache:
// the events of its lane, then serve's arguments, separated by US.
const cacheHelperEnv = "CAIRN_TEST_CACHE_HELPER"

// TestTokenCacheHelper measures, in a process of its own so that no other
// test's allocations count, the heap serve's cache keeps of one lane.
func TestTokenCacheHelper(t *testing.T) {
	spec := os.Getenv(cacheHelperEnv)
	if spec == "" {
		t.Skip("run by the token cache tests")
	}
	fields := strings.Split(spec, "\x1f")
	events, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	fs := newFlagSet("serve", "serve", stdio{err: io.Discard})
	var cfg serveConfig
	cfg.register(fs)
	if ok, code := parseFlags(fs, fields[1:], mergeEnv(natsEnv, modelEnv)); !ok {
		t.Fatalf("serve %v: exit %d", fields[1:], code)
	}
	n := retainedBytes(t, cfg.countCache(), compactInto(t, events))
	fmt.Printf("cache-measure %d %d\n", cfg.tokenCacheEntries, n)
}

// measureCache runs TestTokenCacheHelper and returns serve's
// --token-cache-entries and the bytes its cache kept of a lane of events.
func measureCache(t *testing.T, events int, args ...string) (entries int, retained uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenCacheHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), cacheHelperEnv+"="+strings.Join(append([]string{strconv.Itoa(events)}, args...), "\x1f"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(line, "cache-measure %d %d", &entries, &retained); err == nil {
			return entries, retained
		}
	}
	t.Fatalf("measure printed no figure:\n%s", out)
	return 0, 0
}

// TestTokenCacheBytesPerEntry measures what one cached count costs, the
// figure --token-cache-entries's help states.
func TestTokenCacheBytesPerEntry(t *testing.T) {
	const events = 10_000
	_, n := measureCache(t, events, "--token-cache-entries", strconv.Itoa(2*events))
	perEntry := n / events
	t.Logf("%d entries retain %d bytes: %d bytes/entry", events, n, perEntry)
	if perEntry < statedBytesPerEntry/2 || perEntry > 2*statedBytesPerEntry {
		t.Fatalf("an entry costs %d bytes, --token-cache-entries's help says about %d", perEntry, statedBytesPerEntry)
	}
}

// statedBytesPerEntry is the cost --token-cache-entries's help states.
const statedBytesPerEntry = 80

// TestServeTokenCacheEntriesIsHonoured builds serve's cache from its flags
// and environment and checks what it holds of a lane by the memory it keeps.
func TestServeTokenCacheEntriesIsHonoured(t *testing.T) {
	const events = 2_000
	entries, whole := measureCache(t, events)
	if entries != defaultTokenCacheEntries || whole < events*statedBytesPerEntry/2 {
		t.Fatalf("default: %d entries hold %d bytes of a %d-event lane", entries, whole, events)
	}
	if entries, part := measureCache(t, events, "--token-cache-entries", "200"); entries != 200 || part > whole/4 {
		t.Fatalf("--token-cache-entries 200: %d entries hold %d bytes, the default %d", entries, part, whole)
	}
	t.Setenv("CAIRN_TOKEN_CACHE_ENTRIES", "200")
	if entries, part := measureCache(t, events); entries != 200 || part > whole/4 {
		t.Fatalf("CAIRN_TOKEN_CACHE_ENTRIES=200: %d entries hold %d bytes, the default %d", entries, part, whole)
	}
	var errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--nats-listen", "none", "--token-cache-entries", "1"}, stdio{in: strings.NewReader(""), out: io.Discard, err: &errOut}); code != 2 || !strings.Contains(errOut.String(), "--token-cache-entries") {
		t.Fatalf("--token-cache-entries 1: exit %d, %q", code, errOut.String())
	}
}

// planSummarizer refuses every model call, so that a compaction stops at
// its plan.
type planSummarizer struct{}

func (planSummarizer) Summarize(context.Context, engine.Payload) (engine.Summary, error) {
	return engine.Summary{}, errors.New("no model in this test")
}
