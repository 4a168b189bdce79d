package topology

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// whilePlacing repeats a create only while the cluster answers that it has
// no peers for the placement (a cluster still forming answers so for a few
// seconds after a probe stream was placed), and returns any other error,
// or the last one once its context ends, at once.
func TestWhilePlacingRetriesOnlyPlacement(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: noPeersForPlacement, Description: "no suitable peers for placement, peer offline"}
	other := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
	calls := 0
	err := whilePlacing(context.Background(), func() error {
		if calls++; calls < 3 {
			return noPeers
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("placement answered on the third try: err %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err = whilePlacing(context.Background(), func() error { calls++; return other })
	if !errors.Is(err, other) || calls != 1 {
		t.Fatalf("another error: %v after %d calls, want it after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = whilePlacing(ctx, func() error {
		if calls++; calls == 2 {
			cancel()
		}
		return noPeers
	})
	if err == nil || calls != 2 {
		t.Fatalf("cancelled while placing: %v after %d calls, want an error after 2", err, calls)
	}
}
