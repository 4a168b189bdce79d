package events

import (
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// The types below describe the JSON objects that Request and Activated carry
// as json.RawMessage: a client decodes them from, or encodes them into,
// those fields. All are Cairn's own types, so that what a client builds is
// what Cairn reads, and schemas/ is generated from their tags.

// Policy is the compaction policy (Request.Policy). Every field may be
// omitted and then takes the value of DefaultPolicy; a client that sets
// some fields starts from DefaultPolicy, because a Policy encodes all of
// them.
type Policy = engine.Policy

// DefaultPolicy returns the policy Cairn applies when a request has none.
func DefaultPolicy() Policy { return engine.DefaultPolicy() }

// Accounting is the producer's token accounting (Request.Accounting). All of
// it applies to the lane's first budget only, except method and
// profile_hash, which every budget uses.
type Accounting = engine.Accounting

// AntiThrash is a lane's automatic-compaction state (Request.AntiThrash).
// Cairn keeps it in the lane head; `processor compact` reads it from a
// request.
type AntiThrash = engine.State

// Usage is what one summary call cost, as the provider reported it: an
// entry of Activated.ProviderUsage and Checkpoint.ProviderUsage.
type Usage = engine.Usage

// UncertainAttempt is an entry of Activated.ProviderUsage for an earlier
// summary call whose outcome Cairn does not know (it may have been paid for).
type UncertainAttempt = engine.UncertainAttempt

// Range is an inclusive pair of chat sequences or lane ordinals.
type Range = engine.Range

// ManifestEntry records one tool output a compaction projected (replaced by
// an excerpt pointing at its artifacts).
type ManifestEntry = engine.ManifestEntry

// Semantic is the continuation summary a compacted checkpoint carries
// (Request.PreviousSemantic, Checkpoint.Semantic): docs/request.md and
// schemas/ describe its fields and bounds.
type Semantic = semantic.Semantic

// Checkpoint is a checkpoint as stored (Activated.Checkpoint): json.Unmarshal
// decodes one, json.Marshal encodes it canonically. checkpoint_hash is the
// canonical hash of this object without created_at (Checkpoint.Hash).
type Checkpoint = engine.Checkpoint
