package inspect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/internal/lanegen"
)

func body(t *testing.T, edit func(*events.Request)) []byte {
	t.Helper()
	r := lanegen.Request(lanegen.RequestOptions{Lane: lanegen.Options{Events: 40, Seed: 3}, RequestID: "req-inspect"})
	edit(&r)
	return lanegen.Encode(r)
}

// Validate plans a compacting request up to its model call, names the
// field of a bad one, and checks an events_object request without its
// events only when it has no loader, saying so.
func TestValidate(t *testing.T) {
	ctx := context.Background()
	v := Validate(ctx, body(t, func(*events.Request) {}), nil, time.Now())
	if !v.OK || v.Status != events.StatusCompacted || v.Summarize == nil || v.RequestID != "req-inspect" {
		t.Fatalf("compacting request: %+v", v)
	}
	v = Validate(ctx, body(t, func(r *events.Request) { r.Trigger = "sometimes" }), nil, time.Now())
	if v.OK || v.Error == nil || v.Error.Details["field"] != "trigger" {
		t.Fatalf("bad trigger: %+v", v)
	}
	object := func(r *events.Request) { r.Events, r.EventsObject = nil, "lanes/one" }
	v = Validate(ctx, body(t, object), nil, time.Now())
	if !v.OK || v.Status != "" || v.EventsObject != "lanes/one" || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "events_object") {
		t.Fatalf("events_object without a loader: %+v", v)
	}
	loaded := false
	load := func(context.Context, string) ([]events.InputEvent, error) {
		loaded = true
		return nil, nil
	}
	v = Validate(ctx, body(t, object), load, time.Now())
	if !loaded || v.OK {
		t.Fatalf("events_object with a loader of no events: loaded %v, %+v", loaded, v)
	}
}
