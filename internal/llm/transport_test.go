package llm

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLimitedBody(t *testing.T) {
	cases := []struct {
		body    string
		limit   int64
		wantErr error
	}{
		{"abcd", 4, nil},
		{"abc", 4, nil},
		{"abcde", 4, errResponseTooLarge},
		{"", 1, nil},
	}
	for _, tc := range cases {
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tc.body)), left: tc.limit}
		got, err := io.ReadAll(b)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%q limit %d: err = %v, want %v", tc.body, tc.limit, err, tc.wantErr)
		}
		if tc.wantErr == nil && string(got) != tc.body {
			t.Errorf("%q limit %d: read %q", tc.body, tc.limit, got)
		}
	}
}
