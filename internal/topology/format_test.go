package topology_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

// ownedStreams lists the stream behind every stream, bucket and object
// store Ensure creates.
func ownedStreams() []string {
	var names []string
	for _, cfg := range topology.StreamConfigs(topology.DefaultOptions()) {
		names = append(names, cfg.Name)
	}
	for _, b := range []string{topology.BucketHeads, topology.BucketCheckpoints, topology.BucketLedger, topology.BucketFacts} {
		names = append(names, "KV_"+b)
	}
	return append(names, "OBJ_"+topology.ObjectLanes, "OBJ_"+topology.ObjectArtifacts)
}

func metadata(t *testing.T, js jetstream.JetStream, stream string) map[string]string {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return st.CachedInfo().Config.Metadata
}

func setMetadata(t *testing.T, js jetstream.JetStream, stream, key, value string) {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Metadata = map[string]string{key: value}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// Streams without the marker (one made by hand before Cairn's first
// start, with an operator's own metadata) are marked on start, and the
// operator's key stays.
func TestEnsureMarksUnmarkedStore(t *testing.T) {
	js := embedded(t)
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topology.BucketHeads, Storage: jetstream.FileStorage,
		Metadata: map[string]string{"team": "agents"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(topology.StoreFormat)
	for _, name := range ownedStreams() {
		if got := metadata(t, js, name)[topology.FormatKey]; got != want {
			t.Errorf("%s: %s = %q, want %q", name, topology.FormatKey, got, want)
		}
	}
	if got := metadata(t, js, "KV_"+topology.BucketHeads)["team"]; got != "agents" {
		t.Errorf("operator metadata lost: team = %q", got)
	}
}

// A marker this Cairn cannot honour, on any one of its streams, stops
// Ensure before it changes anything, with a message that says what was
// found and what to do.
func TestEnsureRefusesNewerFormat(t *testing.T) {
	for _, c := range []struct{ stream, found string }{
		{"KV_" + topology.BucketLedger, strconv.Itoa(topology.StoreFormat + 1)},
		{"OBJ_" + topology.ObjectArtifacts, strconv.Itoa(topology.StoreFormat + 7)},
		{topology.StreamEvents, "v3-beta"},
	} {
		t.Run(c.stream, func(t *testing.T) {
			js := embedded(t)
			ctx := context.Background()
			if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
				t.Fatal(err)
			}
			setMetadata(t, js, c.stream, topology.FormatKey, c.found)
			// A stream Ensure would otherwise update, to see that it did not.
			setMetadata(t, js, topology.StreamRequests, "untouched", "yes")
			_, err := topology.Ensure(ctx, js, topology.DefaultOptions())
			checkFormatRefusal(t, err, c.stream, c.found)
			if md := metadata(t, js, topology.StreamRequests); md[topology.FormatKey] != "" || md["untouched"] != "yes" {
				t.Errorf("refused Ensure changed %s: %v", topology.StreamRequests, md)
			}
			if got := metadata(t, js, c.stream)[topology.FormatKey]; got != c.found {
				t.Errorf("marker lowered to %q", got)
			}
		})
	}
}

func checkFormatRefusal(t *testing.T, err error, stream, found string) {
	t.Helper()
	e := errcode.As(err)
	if e == nil || e.Code != topology.CodeUnsupportedStoreFormat {
		t.Fatalf("Ensure = %v, want %s", err, topology.CodeUnsupportedStoreFormat)
	}
	for _, part := range []string{stream, strconv.Quote(found), "Upgrade Cairn", "another store", "nothing was changed"} {
		if !strings.Contains(e.Message, part) {
			t.Errorf("message %q does not say %q", e.Message, part)
		}
	}
	if e.Details["stream"] != stream || e.Details["found"] != found || e.Details["supported"] != topology.StoreFormat {
		t.Errorf("details %v", e.Details)
	}
}

// On a cluster the marker is part of each stream's replicated
// configuration: a start through any node sees what another node wrote.
func TestEnsureFormatOnCluster(t *testing.T) {
	c := testenv.Cluster(t, 3, testenv.Options{})
	ctx := context.Background()
	o := topology.DefaultOptions()
	o.Replicas = 3
	if _, err := topology.Ensure(ctx, c.Node(0).JetStream(t), o); err != nil {
		t.Fatal(err)
	}
	js := c.Node(1).JetStream(t)
	for _, name := range ownedStreams() {
		if got := metadata(t, js, name)[topology.FormatKey]; got != strconv.Itoa(topology.StoreFormat) {
			t.Errorf("%s: %s = %q through another node", name, topology.FormatKey, got)
		}
	}
	newer := strconv.Itoa(topology.StoreFormat + 1)
	setMetadata(t, js, "KV_"+topology.BucketCheckpoints, topology.FormatKey, newer)
	_, err := topology.Ensure(ctx, c.Node(2).JetStream(t), o)
	checkFormatRefusal(t, err, "KV_"+topology.BucketCheckpoints, newer)
}
