package events

import (
	"github.com/cairnhq/cairn/errcode"
)

// Error codes of failed and memory.failed events (Error.Code). They are
// stable: never renamed, never reused. subjects.md says what each means and
// which details it carries.
const (
	CodeInvalidRequest           = errcode.InvalidRequest
	CodeInvalidPolicy            = errcode.InvalidPolicy
	CodeInvalidEvent             = errcode.InvalidEvent
	CodeInvalidState             = errcode.InvalidState
	CodeInvalidRehydrationState  = errcode.InvalidRehydrationState
	CodeInvalidSemantic          = errcode.InvalidSemantic
	CodeNativeUnsupported        = errcode.NativeUnsupported
	CodeUnknownContextLimit      = errcode.UnknownContextLimit
	CodeInvalidContextBudget     = errcode.InvalidContextBudget
	CodeInvalidRenderedRequest   = errcode.InvalidRenderedRequest
	CodeMissingArtifact          = errcode.MissingArtifact
	CodeInvalidProjection        = errcode.InvalidProjection
	CodeRenderError              = errcode.RenderError
	CodeProviderError            = errcode.ProviderError
	CodeInputTooLarge            = errcode.InputTooLarge
	CodeNothingToCompact         = errcode.NothingToCompact
	CodeIneffective              = errcode.Ineffective
	CodeCurrentInputItemTooLarge = errcode.CurrentInputItemTooLarge
	CodeCompactionFailed         = errcode.CompactionFailed
	CodeStaleHead                = errcode.StaleHead
	CodeCheckpointConflict       = errcode.CheckpointConflict
	CodeRequestIDConflict        = errcode.RequestIDConflict
	CodeUnsupportedVersion       = errcode.UnsupportedVersion
	CodePayloadTooLarge          = errcode.PayloadTooLarge
	CodeEventsObjectMissing      = errcode.EventsObjectMissing
	CodeDeadlineExceeded         = errcode.DeadlineExceeded
	CodeProviderAttemptUncertain = errcode.ProviderAttemptUncertain
	CodeProviderUnavailable      = errcode.ProviderUnavailable
	CodeHarvestBadReply          = errcode.HarvestBadReply
	CodeHarvestFailed            = errcode.HarvestFailed
	CodeInternal                 = errcode.Internal

	// Codes of the service's error replies (subjects.md, Service).
	CodeInvalidServiceRequest = errcode.InvalidServiceRequest
	CodeLaneNotFound          = errcode.LaneNotFound
)

// Triggers (Request.Trigger).
const (
	TriggerAuto                 = "auto"
	TriggerManual               = "manual"
	TriggerOverflow             = "overflow"
	TriggerModelSwitchPreflight = "model_switch_preflight"
)

// Statuses of an activation (Activated.Status).
const (
	StatusPruned    = "pruned"
	StatusCompacted = "compacted"
)

// Reasons a request changed nothing (Skipped.Reason).
const (
	SkipBelowTrigger          = "below_trigger"
	SkipCancellationPending   = "cancellation_pending"
	SkipAutomaticLimit        = "automatic_limit"
	SkipInsufficientNewTokens = "insufficient_new_tokens"
	SkipRapidRefill           = "rapid_refill"
)

// Roles (InputEvent.Role).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Codes lists every error code, in the order subjects.md documents them.
func Codes() []string {
	return []string{
		CodeInvalidRequest, CodeInvalidPolicy, CodeInvalidEvent, CodeInvalidState,
		CodeInvalidRehydrationState, CodeInvalidSemantic, CodeNativeUnsupported,
		CodeUnknownContextLimit, CodeInvalidContextBudget, CodeInvalidRenderedRequest,
		CodeMissingArtifact, CodeInvalidProjection, CodeRenderError, CodeProviderError,
		CodeInputTooLarge, CodeNothingToCompact, CodeIneffective, CodeCurrentInputItemTooLarge,
		CodeCompactionFailed, CodeStaleHead, CodeCheckpointConflict, CodeRequestIDConflict,
		CodeUnsupportedVersion, CodePayloadTooLarge, CodeEventsObjectMissing,
		CodeDeadlineExceeded, CodeProviderAttemptUncertain, CodeProviderUnavailable,
		CodeHarvestBadReply, CodeHarvestFailed, CodeInternal,
		CodeInvalidServiceRequest, CodeLaneNotFound,
	}
}

// Triggers lists every trigger, in the order subjects.md documents them.
func Triggers() []string {
	return []string{TriggerAuto, TriggerManual, TriggerOverflow, TriggerModelSwitchPreflight}
}

// Roles lists every event role, in the order subjects.md documents them.
func Roles() []string { return []string{RoleUser, RoleAssistant, RoleTool} }

// Statuses lists every status of an activation, in the order subjects.md
// documents them. A request that changed nothing has no status: its outcome
// is a skipped event.
func Statuses() []string { return []string{StatusPruned, StatusCompacted} }

// SkipReasons lists every reason of a skipped event, in the order
// subjects.md documents them.
func SkipReasons() []string {
	return []string{SkipBelowTrigger, SkipCancellationPending, SkipAutomaticLimit, SkipInsufficientNewTokens, SkipRapidRefill}
}
