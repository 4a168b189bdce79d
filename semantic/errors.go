package semantic

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/errcode"
)

// Shape and constructor messages of the semantic schema. They are part of the
// contract: tests and summarizer repair prompts compare them verbatim.
const (
	msgNotMap          = "semantic output must be a map"
	msgDuplicateFields = "semantic output has duplicate fields"
	msgUnknownFields   = "unknown semantic fields"
	msgMissingFields   = "required semantic fields are missing"
	msgVersion         = "semantic version is invalid"
	msgCollection      = "semantic collection is invalid or oversized"
	msgUnexpected      = "semantic object has unexpected fields"
	msgObject          = "semantic object is invalid"
	msgText            = "semantic text is invalid or oversized"
	msgIDs             = "semantic source event IDs are invalid"
	msgUUID            = "semantic UUID is invalid"
	msgEnum            = "semantic enum value is invalid"
	msgOmissionHash    = "secret omission hash is invalid"
	msgExclusive       = "request excerpt and omission are mutually exclusive"
	msgCoverage        = "semantic coverage is invalid"
)

// invalid and invalidWith name the rule every semantic error breaks: the
// semantic schema (errcode.Rules); details.path says where.
func invalid(message string) *errcode.Error {
	return invalidWith(message, nil)
}

func invalidWith(message string, details map[string]any) *errcode.Error {
	e := errcode.WithDetails(errcode.InvalidSemantic, message, details)
	if _, ok := e.Details["rule"]; !ok {
		e.Details["rule"] = "schema"
	}
	return e
}

// invalidAt is a shape error of the field at path, written as in
// "objective[0].text"; the path goes into the details so that a repair
// prompt can name the field.
func invalidAt(message, path string) *errcode.Error {
	return invalidWith(message, map[string]any{"path": path})
}

// within prefixes the path of err, a shape error of a part, with the
// part's own position: a field name or an index "[i]". Paths are built
// this way, on the way out of a failed check, so that a passing check
// builds none.
func within(err *errcode.Error, part string) *errcode.Error {
	if err == nil {
		return nil
	}
	inner, _ := err.Details["path"].(string)
	switch {
	case inner == "":
		err.Details["path"] = part
	case strings.HasPrefix(inner, "["):
		err.Details["path"] = part + inner
	default:
		err.Details["path"] = part + "." + inner
	}
	return err
}

// index is the path part of list entry i.
func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// validHash reports whether s is 64 lowercase hex characters.
func validHash(s string) bool { return hashPattern.MatchString(s) }

// validID reports whether s can be a citation: 1..IDMaxBytes bytes of valid
// UTF-8 (UTF-8 so that every valid semantic can be hashed).
func validID(s string) bool {
	return len(s) >= 1 && len(s) <= IDMaxBytes && utf8.ValidString(s)
}

// validText reports whether s is 1..maximum bytes of valid UTF-8.
func validText(s string, maximum int) bool {
	return len(s) >= 1 && len(s) <= maximum && utf8.ValidString(s)
}
