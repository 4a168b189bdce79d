package streamread_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cairnhq/cairn/streamread"
	"github.com/cairnhq/cairn/testenv"
)

// MsgAt reads a message that is not there at its first read, as from a
// replica that has not stored it yet, and it reads it with direct gets.
// A message that stays missing is ErrMsgNotFound once the waits are over.
func TestMsgAtReadsAgainWhileNotFound(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	js := srv.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	str, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LAG", Subjects: []string{"lag"}, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	// The message is stored only once the first direct get was seen: the
	// server answers a get as it routes it, so that read missed.
	tap := srv.Conn(t)
	gets := make(chan struct{}, 64)
	sub, err := tap.Subscribe("$JS.API.DIRECT.GET.LAG", func(*nats.Msg) { gets <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		msg, err := streamread.MsgAt(ctx, str, 1)
		if err == nil && string(msg.Data) != "late" {
			err = errors.New("read " + string(msg.Data))
		}
		got <- err
	}()
	select {
	case <-gets:
	case <-ctx.Done():
		t.Fatal("no direct get")
	}
	if _, err := js.Publish(ctx, "lag", []byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a message stored after the first read: %v", err)
	}

	begin := time.Now()
	if _, err := streamread.MsgAt(ctx, str, 9); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("a missing message: %v, want ErrMsgNotFound", err)
	}
	var wait time.Duration
	for _, w := range streamread.LagWaits {
		wait += w
	}
	if took := time.Since(begin); took < wait {
		t.Fatalf("missing after %v, want at least the %v of waits", took, wait)
	}
}
