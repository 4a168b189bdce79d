package consumer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/ledger"
)

// nested returns details depth levels deep, each level with width entries
// of long strings and one nested map.
func nested(depth, width int) map[string]any {
	m := map[string]any{}
	for i := range width {
		m[strings.Repeat("k", 300)+string(rune('a'+i%26))+strings.Repeat("<", i)] = strings.Repeat("<", 10000)
	}
	if depth > 0 {
		m["inner"] = nested(depth-1, width)
		m["list"] = []any{nested(depth-1, width), strings.Repeat("\u2028", 5000)}
	}
	return m
}

// wide returns details 16 entries wide at every level, depth levels deep,
// with leaves of 256 '<' (each escaped to six bytes): within the echo
// bounds entry by entry, megabytes in all.
func wide(depth int) any {
	if depth == 0 {
		return strings.Repeat("<", maxEchoString)
	}
	m := make(map[string]any, maxEchoEntries)
	for i := range maxEchoEntries {
		m[fmt.Sprintf("k%02d", i)] = wide(depth - 1)
	}
	return m
}

func TestBoundValueKeepsEchoesSmall(t *testing.T) {
	b, err := json.Marshal(boundValue(nested(2, 40), 0))
	if err != nil {
		t.Fatal(err)
	}
	// Unbounded these details encode to megabytes; bounded, each level
	// keeps 16 entries of at most 256 bytes.
	if len(b) > 2*maxFailedEventBytes {
		t.Fatalf("bounded details encode to %d bytes", len(b))
	}
	t.Logf("bounded details: %d bytes", len(b))
	got := boundValue([]string{"a", strings.Repeat("b", 1000)}, 0).([]any)
	if len(got) != 2 || len(got[1].(string)) > maxEchoString {
		t.Fatalf("[]string not bounded: %v", got)
	}
}

// A failed event that is over the limit even with bounded details is
// replaced by a minimal one that keeps the code, the retryable flag, the
// request's identity and the stream sequence.
func TestFailedRecordFallsBackToMinimal(t *testing.T) {
	p := &Processor{now: time.Now}
	e := errcode.WithDetails(errcode.InvalidEvent, strings.Repeat("m", 5000), wide(3).(map[string]any))
	d := &delivery{body: []byte(`{"v":1}`), msgID: "req-1", streamSeq: 42, req: &envelope{RequestID: "req-1", Correlation: events.Correlation{ThreadID: "t-1", RunAgentID: "a\x00", CheckpointNamespace: "main"}}}
	rec, err := p.failedRecord(d, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Payload) > maxFailedEventBytes || rec.EventID != "req-1:failed" {
		t.Fatalf("record: %d bytes, id %q", len(rec.Payload), rec.EventID)
	}
	var ev struct {
		RequestID  string `json:"request_id"`
		ThreadID   string `json:"thread_id"`
		RunAgentID string `json:"run_agent_id"`
		Seq        uint64 `json:"stream_sequence"`
		Error      struct {
			Code      string         `json:"code"`
			Message   string         `json:"message"`
			Details   map[string]any `json:"details"`
			Retryable bool           `json:"retryable"`
		} `json:"error"`
	}
	mustJSON(t, rec.Payload, &ev)
	if ev.RequestID != "req-1" || ev.ThreadID != "t-1" || ev.RunAgentID != "" || ev.Seq != 42 {
		t.Fatalf("identity: %+v", ev)
	}
	if ev.Error.Code != errcode.InvalidEvent || ev.Error.Details["truncated"] != true || len(ev.Error.Message) > maxEchoString {
		t.Fatalf("error: %+v", ev.Error)
	}
}

// Without a usable id the event is named after the body, and a long or
// broken traceparent is not copied.
func TestFailedRecordWithoutUsableID(t *testing.T) {
	p := &Processor{now: time.Now}
	body := []byte("{nope")
	d := &delivery{body: body, msgID: strings.Repeat("m", 65480), traceparent: strings.Repeat("t", 60000)}
	rec, err := p.failedRecord(d, errcode.New(errcode.InvalidRequest, "x"))
	if err != nil {
		t.Fatal(err)
	}
	want := "msg-" + ledger.ContentHash(body)[:32]
	if rec.EventID != want+":failed" || !strings.Contains(string(rec.Payload), `"request_id":"`+want+`"`) {
		t.Fatalf("id %q, payload %s", rec.EventID, rec.Payload)
	}
	if _, ok := rec.Headers["traceparent"]; ok {
		t.Fatal("traceparent of 60 000 bytes copied")
	}
}
