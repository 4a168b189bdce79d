package semantic

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
)

// FuzzParse checks that the semantic parser never panics on arbitrary JSON,
// fails only with invalid_compaction_semantic, reads what it accepts as
// encoding/json does, and that what it accepts re-encodes and re-parses to
// identical canonical bytes.
func FuzzParse(f *testing.F) {
	f.Add([]byte(baseJSON))
	f.Add([]byte(strings.Replace(baseJSON, `"version": 1`, `"version": 1.0`, 1)))
	f.Add([]byte(strings.Replace(baseJSON, `"exact_excerpt": "implement the requested behavior", "secret_omission": null`,
		`"exact_excerpt": null, "secret_omission": {"class": "password", "source_span_hash": "`+strings.Repeat("a", 64)+`"}`, 1)))
	f.Add([]byte(strings.Replace(baseJSON, `"rationale": null`, `"rationale": "because \u2028 \"quoted\""`, 1)))
	f.Add([]byte(`{"version":1,"objective":[],"user_requests":[],"constraints":[],"decisions":[],"progress":{"completed":[],"active":[],"blocked":[],"pending":[]},"critical_context":[],"errors":[],"artifact_refs":[],"coverage":{"first_chat_seq":1,"last_chat_seq":1}}`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseJSON(data)
		if err != nil {
			if errcode.Code(err) != errcode.InvalidSemantic {
				t.Fatalf("error %v has code %q", err, errcode.Code(err))
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted value fails Validate: %v", err)
		}
		if want := decodeWithEncodingJSON(t, data); !reflect.DeepEqual(s, want) {
			t.Fatalf("ParseJSON = %#v\nencoding/json = %#v", s, want)
		}
		enc, err := canonical.Encode(s)
		if err != nil {
			t.Fatalf("accepted value does not encode: %v", err)
		}
		s2, err := ParseJSON(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		enc2, err := canonical.Encode(s2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding differs:\n%s\n%s (%v)", enc, enc2, err)
		}
	})
}
