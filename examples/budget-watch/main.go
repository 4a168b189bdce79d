// Command budget-watch prints each lane's new context budget whenever Cairn activates a checkpoint.
//
//	go run ./examples/budget-watch --nats-url nats://127.0.0.1:4222
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/cairnhq/cairn/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	url := flag.String("nats-url", nats.DefaultURL, "NATS server URL")
	fromStart := flag.Bool("from-start", false, "replay every activation since the stream began")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Cairn's liveness settings: a frozen server is left within 8 s.
	connOpts, err := events.ConnOptions{}.NATSOptions()
	if err != nil {
		log.Fatal(err)
	}
	nc, err := nats.Connect(*url, append(connOpts, nats.MaxReconnects(-1))...)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	opts := events.FollowOptions{Subjects: []string{events.SubjectActivated}, FromStart: *fromStart}
	err = events.Follow(ctx, js, opts, func(ev events.Event) error {
		a := ev.Activated
		fmt.Printf("%s/%s generation %d (%s): %d -> %d tokens, %d reclaimed; %d events kept verbatim\n",
			a.RunAgentID, a.CheckpointNamespace, a.Generation, a.Status,
			a.TokensBefore, a.TokensAfter, a.TokensReclaimed, len(a.RetainedEventIDs))
		return nil
	})
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
