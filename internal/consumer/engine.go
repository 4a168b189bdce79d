package consumer

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/engine"
	"github.com/cairnhq/cairn/semantic"
)

// EngineCompactor is the Compactor of internal/engine. It applies the lane
// state Cairn holds in the lane's head to the decoded request: the head's
// anti-thrash State (after observe_new_tokens when the request carries
// new_tokens_since_compaction) and the active checkpoint's semantic; and it
// computes the State after record_success for the processor to store only
// if the checkpoint becomes active. Counts, when set, keeps the token
// counts of event views across requests (a lane is resent whole each time).
type EngineCompactor struct {
	Counts *engine.CountCache
}

var _ Compactor = EngineCompactor{}

var _ Validator = EngineCompactor{}

// Validate implements Validator: it decodes and checks the whole request,
// events included, and keeps the result in in for Compact.
func (c EngineCompactor) Validate(in *Input) error {
	_, err := in.request()
	return err
}

// request decodes in's request once.
func (in *Input) request() (*engine.Request, error) {
	if in.decodedRequest != nil {
		return in.decodedRequest, nil
	}
	var req *engine.Request
	var err error
	if in.Decoded != nil {
		req, err = engine.DecodeRequestValue(in.Decoded)
		in.Decoded = nil // the engine owns what it was given
	} else {
		req, err = engine.DecodeRequest(in.Body)
	}
	if err != nil {
		return nil, err
	}
	if req.Events == nil {
		if req.Events, err = engine.DecodeEvents(in.Events); err != nil {
			return nil, err
		}
	}
	in.decodedRequest = req
	return req, nil
}

// Compact implements Compactor.
func (c EngineCompactor) Compact(ctx context.Context, in Input, s engine.Summarizer, now time.Time) (*Result, error) {
	req, err := in.request()
	if err != nil {
		return nil, err
	}
	state, err := laneState(in.State, req.NewTokensSinceCompaction)
	if err != nil {
		return nil, err
	}
	if len(in.State) > 0 && in.StateRootTurnID != req.RootTurnID {
		state = state.StartRootTurn()
	}
	req.AntiThrash = state
	if req.PreviousSemantic == nil && len(in.PreviousSemantic) > 0 {
		if req.PreviousSemantic, err = semantic.ParseJSON(in.PreviousSemantic); err != nil {
			return nil, err
		}
	}
	res, err := engine.CompactCounting(ctx, req, s, now, c.Counts)
	if err != nil {
		return nil, err
	}
	return resultOf(req, res)
}

// laneState decodes the head's State and observes the request's new-token
// count.
func laneState(raw json.RawMessage, newTokens *int64) (events.AntiThrash, error) {
	var state events.AntiThrash
	if len(raw) > 0 {
		v, err := canonical.Decode(raw)
		if err != nil {
			return state, errcode.Wrap(errcode.InvalidState, "stored lane state is not JSON", err)
		}
		if state, err = events.DecodeState(v); err != nil {
			return state, err
		}
	}
	if newTokens != nil {
		return state.ObserveNewTokens(*newTokens)
	}
	return state, nil
}

func resultOf(req *engine.Request, res *engine.Result) (*Result, error) {
	out := &Result{
		Status: res.Status, SkipReason: res.Suppression, TokensBefore: res.TokensBefore,
		TokensAfter: res.TokensAfter, TokensReclaimed: res.TokensReclaimed, ArtifactIDs: nonNil(res.ArtifactIDs),
	}
	if res.Status == engine.StatusSkipped || res.Checkpoint == nil {
		return out, nil
	}
	cp := res.Checkpoint
	var err error
	if out.Checkpoint, out.CheckpointHash, err = cp.EncodeAndHash(); err != nil {
		return nil, err
	}
	if cp.SemanticHash != nil {
		out.SemanticHash = *cp.SemanticHash
	}
	out.RetainedEventIDs = nonNil(cp.RetainedEventIDs)
	usage := res.ProviderUsage
	if usage == nil {
		usage = []any{}
	}
	if out.ProviderUsage, err = canonical.Encode(usage); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "provider usage is not canonical JSON", err)
	}
	// res.State is the lane state in this request's accounting units: the
	// state stored before it may name none or other units, and recording
	// on it would leave the next request to reset every count.
	next, err := res.State.RecordSuccess(req.Trigger, cp.ContextLaneEventOrdinalHighWatermark, res.TokensAfter)
	if err != nil {
		return nil, err
	}
	if out.NextState, err = json.Marshal(next); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "encode lane state", err)
	}
	if res.Status == events.StatusCompacted {
		retained := make(map[string]bool, len(cp.RetainedEventIDs))
		for _, id := range cp.RetainedEventIDs {
			retained[id] = true
		}
		for _, e := range req.Events {
			if !retained[e.EventID] {
				out.CutEventIDs = append(out.CutEventIDs, e.EventID)
			}
		}
	}
	return out, nil
}

// semanticHash is the hash the engine gives a semantic (canonical hash of
// its map), for comparing a request's previous_semantic with the head's.
// v is the previous_semantic member as decoded with the request.
func semanticHash(v any) (string, error) {
	s, err := semantic.Parse(v)
	if err != nil {
		return "", err
	}
	h, err := canonical.Hash(s.Map())
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidSemantic, "previous_semantic is not canonical JSON", err).With("field", "previous_semantic").With("rule", "canonical")
	}
	return h, nil
}
