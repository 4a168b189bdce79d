package semantic

import "reflect"

// Bounds are the size limits of the schema. The validator
// always enforces DefaultBounds; JSONSchema and StrictSchema take a Bounds so
// the provider-facing schemas are derived from the same table.
type Bounds struct {
	Objective         int // max objective entries
	UserRequests      int // max user_requests entries
	Constraints       int // max constraints entries
	Decisions         int // max decisions entries
	ProgressCompleted int // max progress.completed entries
	ProgressActive    int // max progress.active entries
	ProgressBlocked   int // max progress.blocked entries
	ProgressPending   int // max progress.pending entries
	CriticalContext   int // max critical_context entries
	Errors            int // max errors entries
	ArtifactRefs      int // max artifact_refs entries
	SourceEventIDs    int // max ids in any id list
	TextBytes         int // max bytes of any text field
}

// DefaultBounds are the bounds Cairn enforces (docs/request.md gives the
// byte limit of the whole semantic, semantic_max_bytes).
var DefaultBounds = Bounds{
	Objective:         8,
	UserRequests:      64,
	Constraints:       64,
	Decisions:         64,
	ProgressCompleted: 128,
	ProgressActive:    64,
	ProgressBlocked:   64,
	ProgressPending:   64,
	CriticalContext:   128,
	Errors:            64,
	ArtifactRefs:      128,
	SourceEventIDs:    32,
	TextBytes:         4000,
}

// limits is the validator's private copy of DefaultBounds, so that a caller
// mutating the exported variable cannot loosen validation.
var limits = DefaultBounds

const (
	// IDMaxBytes is the longest citation (event or artifact id) accepted.
	// Any id of 1..200 bytes is a citation, not only a UUIDv7: lanes carry
	// their producers' event ids.
	IDMaxBytes = 200
	// ClassMaxBytes is the longest secret-omission class.
	ClassMaxBytes = 64
	// DefaultMaxBytes is the canonical size cap used when Sources.MaxBytes is 0.
	DefaultMaxBytes = 131072
	// MaxJSONBytes bounds the documents ParseJSON reads.
	MaxJSONBytes = 1 << 20
)

// Fields lists the top-level keys in the order of the type.
var Fields = func() []string {
	var names []string
	for _, f := range fieldsOf[reflect.TypeFor[Semantic]()] {
		names = append(names, f.name)
	}
	return names
}()

// Status values of a user request and of an error entry.
const (
	RequestActive     = "active"
	RequestCompleted  = "completed"
	RequestSuperseded = "superseded"
	ErrorOpen         = "open"
	ErrorResolved     = "resolved"
)

var (
	requestStatuses = []string{RequestActive, RequestCompleted, RequestSuperseded}
	errorStatuses   = []string{ErrorOpen, ErrorResolved}
)
