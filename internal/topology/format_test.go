package topology_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
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

// A store from a release before the marker (streams without it, one with
// an operator's own metadata) is marked on start, and the operator's key
// stays.
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

// A ledger of format 2 is upgraded on start: every request id it holds
// gets a marker in the checkpoints bucket unless a checkpoint is there.
// An upgrade that fails leaves the ledger's format as it was, so that the
// next start runs it again; then the marker is raised.
func TestEnsureUpgradesAFormat2Ledger(t *testing.T) {
	js := embedded(t)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topology.BucketLedger, Storage: jetstream.FileStorage,
		Metadata: map[string]string{topology.FormatKey: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"req-failed", "req-active"} {
		key, _ := lanes.IDKey(id)
		if _, err := kv.Put(ctx, key, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	checkpoints, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topology.BucketCheckpoints, Storage: jetstream.FileStorage,
		Metadata: map[string]string{topology.FormatKey: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	activeKey, _ := lanes.IDKey("req-active")
	if _, err := checkpoints.Put(ctx, activeKey, []byte(`{"checkpoint_id":"req-active"}`)); err != nil {
		t.Fatal(err)
	}

	o := topology.DefaultOptions()
	o.MarkLedgerIDs = func(context.Context, jetstream.KeyValue, jetstream.KeyValue) (int, error) {
		return 0, errors.New("stopped")
	}
	if _, err := topology.Ensure(ctx, js, o); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Ensure with a failing upgrade: %v", err)
	}
	if got := metadata(t, js, "KV_"+topology.BucketLedger)[topology.FormatKey]; got != "2" {
		t.Fatalf("a failed upgrade left the ledger at format %q", got)
	}

	o.MarkLedgerIDs = lanes.MarkLedgerKeys
	stores, err := topology.Ensure(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := metadata(t, js, "KV_"+topology.BucketLedger)[topology.FormatKey]; got != strconv.Itoa(topology.StoreFormat) {
		t.Fatalf("ledger at format %q after the upgrade", got)
	}
	ls := lanes.New(stores.Heads, stores.Checkpoints)
	if cp, err := ls.GetCheckpoint(ctx, "req-failed"); err != nil || cp == nil || !cp.IsMarker() || cp.ID != "req-failed" {
		t.Fatalf("req-failed: %+v (%v)", cp, err)
	}
	if cp, err := ls.GetCheckpoint(ctx, "req-active"); err != nil || cp == nil || cp.IsMarker() {
		t.Fatalf("req-active's checkpoint was replaced: %+v (%v)", cp, err)
	}
}
