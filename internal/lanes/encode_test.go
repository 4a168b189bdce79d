package lanes

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/outbox"
)

// Head.Encode must give json.Marshal's bytes for every head. The values are
// filled by reflection, every field of every struct (the outbox records
// included), so a field added to Head, Lane or outbox.Record without its
// line in the encoder fails here.
func TestHeadEncodeMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var h Head
		fillStruct(r, reflect.ValueOf(&h).Elem())
		got, err := h.Encode()
		if err != nil {
			t.Fatalf("head %d: %v", i, err)
		}
		want, err := json.Marshal(&h)
		if err != nil {
			t.Fatalf("head %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Fatalf("head %d: Encode\n%s\njson.Marshal\n%s", i, got, want)
		}
	}
}

// Checkpoint records are encoded by hand as well, plan included.
func TestCheckpointEncodeMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		var c Checkpoint
		fillStruct(r, reflect.ValueOf(&c).Elem())
		got, err := c.appendJSON(nil)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Fatalf("checkpoint %d: appendJSON\n%s\njson.Marshal\n%s", i, got, want)
		}
	}
}

// rawValues are valid JSON values, some of which json.Marshal rewrites
// (whitespace, HTML characters, U+2028), and "" for nil (json.Marshal
// rejects an empty non-nil RawMessage, where Encode writes null).
var rawValues = []string{``, `null`, `{}`, `{"a":1}`, `{"a": 1}`, "[1,\n2]", `"<b>&"`, "{\"k\":\"\u2028\"}", `{"a":"q\"\\"}`}

// pieces are what a random string is made of: plain text and everything
// json.Marshal escapes or replaces.
var pieces = []string{"a", "id-7", "<", ">", "&", `"`, `\`, "\n", "\x01", "é", "\u2028", "\u2029", "\xff"}

func fillStruct(r *rand.Rand, v reflect.Value) {
	for i := range v.NumField() {
		fill(r, v.Field(i))
	}
}

// fill sets v to a random value, or leaves it zero one time in four.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Type() {
	case reflect.TypeFor[json.RawMessage]():
		if raw := rawValues[r.IntN(len(rawValues))]; raw != "" {
			v.SetBytes([]byte(raw))
		}
		return
	case reflect.TypeFor[time.Time]():
		zone := []*time.Location{time.UTC, time.FixedZone("x", -7200)}[r.IntN(2)]
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(zone)))
		return
	}
	if r.IntN(4) == 0 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		v.SetString(b.String())
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64N(1<<40) - 1<<39)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		fillStruct(r, v)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), r.IntN(3), 2)
		for i := range s.Len() {
			fill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range r.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(r, k)
			fill(r, e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		panic(fmt.Sprintf("fill: no random values of %s: add them", v.Type()))
	}
}

// A record stores the checkpoint once: the plan's activated event names
// the record instead of holding it, is read back as stored, and is made
// whole from the record with json.Marshal's bytes for the whole event.
// Bodies include bytes json.Marshal rewrites.
func TestCheckpointRecordStoresTheCheckpointOnce(t *testing.T) {
	for i, raw := range rawValues[1:] {
		body := json.RawMessage(raw)
		id := fmt.Sprint("cp-", i)
		ev := activated(id)
		event := stored(t, ev)
		c := &Checkpoint{ID: id, Body: body, Plan: &Head{
			CheckpointID: id, Outbox: []outbox.Record{event, {Subject: "h", EventID: "j", Payload: json.RawMessage(`{}`)}},
		}}
		_, value, err := c.keyValue()
		if err != nil {
			t.Fatal(err)
		}
		encodedBody, _ := json.Marshal(body)
		// (null and {} stand elsewhere in a record too.)
		if n := strings.Count(string(value), string(encodedBody)); len(encodedBody) > 4 && n != 1 {
			t.Errorf("body %s: the record holds the checkpoint %d times: %s", raw, n, value)
		}
		got, err := decodeCheckpoint(value)
		if err != nil {
			t.Fatalf("body %s: %v", raw, err)
		}
		if len(got.Plan.Outbox) != 2 || string(got.Plan.Outbox[0].Payload) != string(event.Payload) || string(got.Plan.CheckpointBody) != string(got.Body) {
			t.Fatalf("body %s: read back %+v, want the plan's event %s naming the record", raw, got.Plan, event.Payload)
		}
		rec, err := Resolved(got.Plan.Outbox[0], got)
		if want := whole(t, ev, body); err != nil || string(rec.Payload) != want {
			t.Errorf("body %s: made whole %s (%v), want %s", raw, rec.Payload, err, want)
		}
	}
}
