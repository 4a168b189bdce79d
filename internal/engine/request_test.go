package engine

import (
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
)

func TestActiveInputEventIDs(t *testing.T) {
	events := fixtureEvents(t)
	ids := func(ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = uuid7(n)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		ids   []string
		valid bool
	}{
		{"none", nil, true},
		{"empty", []string{}, true},
		{"the last", ids(6), true},
		{"all, out of order", ids(6, 1, 5, 2, 4, 3), true},
		{"absent", ids(7), false},
		{"present then absent", ids(1, 7), false},
		{"duplicate", ids(2, 2), false},
		{"duplicate of an absent id", ids(7, 7), false},
		{"more than the events", ids(1, 2, 3, 4, 5, 6, 1), false},
	} {
		req := fixtureRequest(t)
		req.Events, req.ActiveInputEventIDs = events, tc.ids
		err := req.Validate()
		if tc.valid && err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.valid {
			if e := wantCode(t, err, errcode.InvalidRequest); e.Message != "active input event IDs are invalid" {
				t.Fatalf("%s: %q", tc.name, e.Message)
			}
		}
	}
}
