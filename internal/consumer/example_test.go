package consumer_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/consumer"
)

// Classify is the one place that decides how a delivery is settled.
func ExampleClassify() {
	backoff := []time.Duration{2 * time.Second, 10 * time.Second}
	now := time.Now()
	show := func(err error, delivered uint64) {
		d := consumer.Classify(err, delivered, 3, backoff, now)
		switch d.Action {
		case consumer.Fail:
			fmt.Println(d.Action, d.Err.Code)
		case consumer.Nak:
			fmt.Println(d.Action, d.Delay)
		default:
			fmt.Println(d.Action)
		}
	}
	show(nil, 1)
	show(errcode.New(errcode.StaleHead, "parent replaced"), 1)
	show(errors.New("nats: timeout"), 1)
	show(errors.New("nats: timeout"), 2)
	show(errors.New("nats: timeout"), 3)
	// Output:
	// ack
	// fail stale_head
	// nak 2s
	// nak 10s
	// fail provider_unavailable
}

// DefaultConfig is valid as is; a deployment changes what it needs and
// validates again.
func ExampleConfig_Validate() {
	cfg := consumer.DefaultConfig()
	cfg.Workers = 32
	fmt.Println(cfg.Validate())
	cfg.OnUncertain = "maybe"
	fmt.Println(cfg.Validate())
	// Output:
	// <nil>
	// consumer: OnUncertain must be "retry" or "fail", got maybe
}
