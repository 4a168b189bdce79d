package topology_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/natsrv"
	"github.com/cairnhq/cairn/internal/topology"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

// The upgrade harness: a store written in one data directory, the server
// stopped, and a Cairn started on that directory again, as serve does on
// --data-dir. A release that raises StoreFormat adds its upgrade test
// here: it writes the older store (or unpacks one the older release wrote),
// restarts on it and checks that its records read and that Ensure raised
// every marker.

// The marker is stored with each stream's configuration in the data
// directory: a restart on the same store reads it, and Ensure keeps it.
func TestStoreFormatSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	js, stop := serveDirUntil(t, dir)
	if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	stop()

	js, _ = serveDirUntil(t, dir)
	want := strconv.Itoa(topology.StoreFormat)
	for _, name := range ownedStreams() {
		if got := metadata(t, js, name)[topology.FormatKey]; got != want {
			t.Errorf("%s after a restart: %s = %q, want %q", name, topology.FormatKey, got, want)
		}
	}
	if _, err := topology.Ensure(ctx, js, topology.DefaultOptions()); err != nil {
		t.Fatalf("Ensure on its own store: %v", err)
	}
}

// A store a newer Cairn marked is refused on the next start with the clear
// message, and nothing in it changes: neither its records nor the
// metadata of the streams Ensure would otherwise update.
func TestUpgradeRefusesNewerFormat(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	js, stop := serveDirUntil(t, dir)
	stores, err := topology.Ensure(ctx, js, topology.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stores.Heads.Put(ctx, "lane", []byte(`{"generation":7}`)); err != nil {
		t.Fatal(err)
	}
	newer := strconv.Itoa(topology.StoreFormat + 1)
	setMetadata(t, js, "KV_"+topology.BucketHeads, topology.FormatKey, newer)
	setMetadata(t, js, topology.StreamRequests, "untouched", "yes")
	stop()

	js, _ = serveDirUntil(t, dir)
	_, err = topology.Ensure(ctx, js, topology.DefaultOptions())
	checkFormatRefusal(t, err, "KV_"+topology.BucketHeads, newer)
	if md := metadata(t, js, topology.StreamRequests); md[topology.FormatKey] != "" || md["untouched"] != "yes" {
		t.Errorf("refused Ensure changed %s: %v", topology.StreamRequests, md)
	}
	kv, err := js.KeyValue(ctx, topology.BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "lane"); err != nil || string(e.Value()) != `{"generation":7}` {
		t.Fatalf("the refused store's head: %v", err)
	}
}

// serveDir starts an embedded server on the store in dir, as serve does on
// --data-dir, until the test ends.
func serveDir(t *testing.T, dir string) jetstream.JetStream {
	t.Helper()
	js, _ := serveDirUntil(t, dir)
	return js
}

// serveDirUntil is serveDir that also returns a stop, after which another
// server may start on dir.
func serveDirUntil(t *testing.T, dir string) (jetstream.JetStream, func()) {
	t.Helper()
	s, err := natsrv.Start(natsrv.Config{DataDir: dir, Listen: natsrv.ListenNone, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := s.Connect()
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	stop := func() {
		nc.Close()
		s.Shutdown()
	}
	t.Cleanup(stop)
	js := testenv.JetStream(t, nc)
	return js, stop
}
