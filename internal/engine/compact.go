package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/events"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/internal/redact"
	"github.com/cairnhq/cairn/semantic"
)

// Compact runs the compaction algorithm of docs/request.md ("How Cairn
// decides") on one request and returns a skipped, pruned or compacted
// Result, or an *errcode.Error with the contract's code. It is pure: it
// reads no clock (now stamps the checkpoint), does no I/O, and calls only
// the Summarizer (with ctx) and the request's Renderer. It never modifies
// req. It recovers panics: a panicking Summarizer is
// compaction_provider_error, a panicking Renderer compaction_render_error. An *errcode.Error returned by the Summarizer is
// passed through unchanged.
func Compact(ctx context.Context, req *Request, s Summarizer, now time.Time) (*Result, error) {
	return CompactCounting(ctx, req, s, now, nil)
}

// CompactCounting is Compact reusing, and adding to, the token counts of
// event views in counts (nil for none), for a caller that compacts the
// same lanes again and again.
func CompactCounting(ctx context.Context, req *Request, s Summarizer, now time.Time, counts *CountCache) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, errcode.WithDetails(errcode.CompactionFailed, "compaction failed",
				map[string]any{"reason": fmt.Sprint(r)})
		}
	}()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.Policy.Mode != events.ModePortable {
		return nil, errcode.Field(errcode.NativeUnsupported, "provider-native compaction is not implemented by this engine",
			"policy.mode", "supported").With("value", req.Policy.Mode).With("expected", []any{events.ModePortable})
	}
	renderer, err := RendererFor(req.Render)
	if err != nil {
		return nil, err
	}
	c := &compaction{ctx: ctx, req: req, policy: req.Policy, summarizer: s, renderer: renderer, now: now}
	if req.ModelProfile.Tokenizer != nil { // the views' token counts are wanted
		c.counts = newViewCounts(counts, len(req.Events))
		c.counts.laneView = c.laneView
	}
	defer c.releaseViews()
	return c.run()
}

// compaction is the working state of one Compact call.
type compaction struct {
	ctx        context.Context
	req        *Request
	policy     events.Policy
	summarizer Summarizer
	renderer   Renderer
	now        time.Time
	counts     *viewCounts // nil when no tokenizer counts the views

	before   *ContextBudget
	limit    int64
	state    events.AntiThrash   // rebased anti-thrash state
	prefix   []events.InputEvent // original (unprojected) older events
	tail     []events.InputEvent
	manifest []events.ManifestEntry

	// views are the canonical views of req.Events, encoded on first use;
	// projected marks the prefix events projection replaced, whose views
	// are not among them.
	views     *laneViews
	projected []bool

	// semantics are the canonical encodings of the semantics this
	// compaction rendered (encodeSemantic).
	semantics []encodedSemantic
}

// encodedSemantic is a semantic and its canonical encoding.
type encodedSemantic struct {
	sem *semantic.Semantic
	enc []byte
}

// encodeSemantic returns the canonical encoding of sem ("null" for none),
// encoding each semantic once per compaction: the previous semantic is
// rendered for the lane's budget before and after, and the new one for the
// budget after, its hash and the checkpoint. A semantic is not changed once
// the compaction has it (redaction makes a copy).
func (c *compaction) encodeSemantic(sem *semantic.Semantic) ([]byte, error) {
	for _, s := range c.semantics {
		if s.sem == sem {
			return s.enc, nil
		}
	}
	enc, err := sem.AppendCanonical(nil)
	if err != nil {
		return nil, err
	}
	c.semantics = append(c.semantics, encodedSemantic{sem: sem, enc: enc})
	return enc, nil
}

func (c *compaction) run() (*Result, error) {
	if err := c.measureBefore(); err != nil {
		return nil, err
	}
	if reason, err := c.suppression(); err != nil || reason != "" {
		if err != nil {
			return nil, err
		}
		return c.skipped(reason), nil
	}
	cut := cutIndex(c.req.Events, c.tailBudget(), c.req.ActiveInputEventIDs, func(i int) (int64, error) {
		return c.eventTokens(&c.req.Events[i], i)
	})
	c.prefix, c.tail = c.req.Events[:cut], c.req.Events[cut:]
	projectedPrefix, manifest, err := projectPrefix(c.prefix)
	if err != nil {
		return nil, err
	}
	c.manifest = manifest
	c.projected = projectedFlags(c.prefix, manifest)
	if res, err := c.tryPrune(projectedPrefix); res != nil || err != nil {
		return res, err
	}
	return c.summarizeAndCheck(projectedPrefix)
}

// measureBefore builds the initial budget (tokens_before): from the caller's
// byte count when given, else by rendering the whole lane.
func (c *compaction) measureBefore() error {
	a := c.req.Accounting
	opts := BudgetOptions{
		TriggerRatio:             c.policy.TriggerRatio,
		Categories:               a.CategoryBytes,
		RequestedMaxOutputTokens: c.req.RequestedMaxOutputTokens,
		AccountingMethod:         a.Method,
		ReportedInputTokens:      a.ReportedInputTokens,
		ReportedUsageBaseline:    a.ReportedUsageBaseline,
		ComponentDescriptors:     a.ComponentDescriptors,
		ProfileHash:              a.ProfileHash,
		counts:                   c.counts,
	}
	if n := c.req.RenderedRequestBytes; n != nil {
		// Check the limit first so a bad profile fails before any rendering.
		before, err := newBudget(c.req.ModelProfile, *n, nil, opts)
		c.before = before
		return c.setLimit(err)
	}
	if _, err := c.req.ModelProfile.EffectiveInputLimit(c.req.RequestedMaxOutputTokens); err != nil {
		return err
	}
	before, err := c.measure(c.req.PreviousSemantic, c.req.Events, 0, func(r Rendered) (*ContextBudget, error) {
		opts.views = r.views
		return newBudget(c.req.ModelProfile, int64(len(r.Bytes)), r.Bytes, opts)
	})
	c.before = before
	return c.setLimit(err)
}

func (c *compaction) setLimit(err error) error {
	if err != nil {
		return err
	}
	c.limit = c.before.EffectiveInputLimit
	return nil
}

// laterBudget measures a rendered candidate request: same profile, ratio,
// output reservation, method and profile hash as the before budget, the
// renderer's categories, and no usage floor or baseline: reported usage
// counts only the request as sent (docs/request.md, "The budget").
func (c *compaction) laterBudget(r Rendered) (*ContextBudget, error) {
	return newBudget(c.req.ModelProfile, int64(len(r.Bytes)), r.Bytes, BudgetOptions{
		TriggerRatio:             c.policy.TriggerRatio,
		Categories:               r.Categories,
		RequestedMaxOutputTokens: c.req.RequestedMaxOutputTokens,
		AccountingMethod:         c.req.Accounting.Method,
		ProfileHash:              c.req.Accounting.ProfileHash,
		views:                    r.views,
		counts:                   c.counts,
	})
}

// suppression rebases the anti-thrash state onto the before budget's units,
// records new tokens, and returns why an automatic request must be skipped
// (docs/request.md, "When Cairn skips an auto request"), or "".
func (c *compaction) suppression() (string, error) {
	state, err := c.req.AntiThrash.RebaseAccounting(events.AccountingIdentity{
		Method: c.before.Method, Version: c.before.Version, ProfileHash: c.before.ProfileHash,
	})
	if err != nil {
		return "", err
	}
	if n := c.req.NewTokensSinceCompaction; n != nil {
		if state, err = state.ObserveNewTokens(*n); err != nil {
			return "", err
		}
	}
	c.state = state
	if c.req.Trigger != events.TriggerAuto || c.req.StructuralPressure {
		return "", nil
	}
	if reason := state.AutoSuppression(c.policy); reason != "" {
		return reason, nil
	}
	if c.before.EstimatedTokens < c.before.TriggerTokens {
		return events.SkipBelowTrigger, nil
	}
	return "", nil
}

func (c *compaction) skipped(reason string) *Result {
	return &Result{
		Status:             StatusSkipped,
		TokensBefore:       c.before.EstimatedTokens,
		TokensAfter:        c.before.EstimatedTokens,
		SourceEventCount:   len(c.req.Events),
		RetainedEventCount: len(c.req.Events),
		RetainedEvents:     c.req.Events,
		ArtifactIDs:        []string{},
		Suppression:        reason,
		State:              c.state,
	}
}

// tailBudget is limit × recent_tail_ratio clamped to the policy's range.
func (c *compaction) tailBudget() int64 {
	b := floorRatio(c.limit, c.policy.RecentTailRatio)
	return min(max(b, c.policy.RecentTailMinTokens), c.policy.RecentTailMaxTokens)
}

// tryPrune returns a pruned Result when projection alone releases enough
// (docs/request.md, "Tool output projection"), else nil.
func (c *compaction) tryPrune(projectedPrefix []events.InputEvent) (*Result, error) {
	if len(c.manifest) == 0 || c.pruneCannotReclaim() {
		return nil, nil
	}
	projected := make([]events.InputEvent, 0, len(c.req.Events))
	projected = append(append(projected, projectedPrefix...), c.tail...)
	after, err := c.measure(c.req.PreviousSemantic, projected, 0, c.laterBudget)
	if err != nil {
		return nil, err
	}
	reclaimed := c.before.EstimatedTokens - after.EstimatedTokens
	if after.EstimatedTokens > floorRatio(c.limit, c.policy.PruneReleaseRatio) || reclaimed < c.policy.MinimumPruneReclaimTokens {
		return nil, nil
	}
	// Cairn carries the previous semantic forward so activating a pruned
	// checkpoint never loses the earlier summary.
	cp, err := c.checkpoint(events.RepresentationPruned, c.req.PreviousSemantic, projected, nil, after, nil)
	if err != nil {
		return nil, err
	}
	return c.result(events.StatusPruned, cp, projected, after, nil), nil
}

// pruneCannotReclaim reports whether no projected lane can reclaim
// minimum_prune_reclaim_tokens, whatever it counts: a later budget has no
// usage floor or baseline, so it is never below zero. Then canonical_v1
// need not render and count the projected lane at all. Another renderer
// still renders it, so that its failures stay where they were.
func (c *compaction) pruneCannotReclaim() bool {
	_, canonical := c.renderer.(canonicalRenderer)
	return canonical && c.before.EstimatedTokens < c.policy.MinimumPruneReclaimTokens
}

// outputAllowance returns the summary's output tokens and the input budget
// of one summary call: the limit less the output and a fixed prompt reserve.
func (c *compaction) outputAllowance() (output, input int64, err error) {
	requested := floorRatio(c.limit, c.policy.SummaryOutputRatio)
	output = min(max(requested, c.policy.SummaryOutputMinTokens), c.policy.SummaryOutputMaxTokens)
	if p := c.req.ModelProfile.MaxOutputTokens; p != nil {
		output = min(output, *p)
	}
	input = c.limit - output - promptReserveTokens
	if input <= 0 {
		return 0, 0, errcode.Field(errcode.InputTooLarge, "compactor prompt and output allowance do not fit",
			"model_profile.max_input_tokens", "range").
			With("effective_input_limit", c.limit).With("output_tokens", output).
			With("prompt_reserve_tokens", int64(promptReserveTokens))
	}
	return output, input, nil
}

// chunk splits the projected prefix greedily into at most
// maximum_hierarchical_summary_calls chunks that each fit the input budget
// (docs/request.md, "Summaries and effectiveness"). Once over the limit it
// goes on counting, so the failure says how many calls the history needs.
func (c *compaction) chunk(prefix []events.InputEvent, inputBudget int64) ([][]events.InputEvent, error) {
	var chunks [][]events.InputEvent
	start, total, needed := 0, int64(0), int64(0)
	limit := c.policy.MaximumHierarchicalSummaryCalls
	for i := range prefix {
		cost, err := c.eventTokens(&prefix[i], i)
		if err != nil {
			return nil, err
		}
		if cost > inputBudget && needed == 0 {
			return nil, errcode.Field(errcode.InputTooLarge, "one source event exceeds the compactor input limit",
				"events["+strconv.Itoa(i)+"]", "range").
				With("event_id", prefix[i].EventID).With("tokens", cost).With("input_budget", inputBudget)
		}
		if i > start && cost > inputBudget-total {
			switch {
			case needed > 0:
				needed++
			case int64(len(chunks))+1 >= limit:
				needed = int64(len(chunks)) + 1 // the closed chunks; the open one is added below
			default:
				chunks = append(chunks, prefix[start:i])
			}
			start, total = i, 0
		}
		total += cost
	}
	if needed > 0 {
		return nil, errcode.Field(errcode.InputTooLarge, "source history needs too many summary calls",
			"policy.maximum_hierarchical_summary_calls", "range").
			With("maximum_hierarchical_summary_calls", limit).With("needed_calls", needed+1).With("limit", limit)
	}
	if len(prefix) > start {
		chunks = append(chunks, prefix[start:])
	}
	return chunks, nil
}

func (c *compaction) summarizeAndCheck(projectedPrefix []events.InputEvent) (*Result, error) {
	outputTokens, inputBudget, err := c.outputAllowance()
	if err != nil {
		return nil, err
	}
	chunks, err := c.chunk(projectedPrefix, inputBudget)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 0 {
		if err := c.checkTailAlone(); err != nil {
			return nil, err
		}
	}
	sem, usage, err := c.summarizeChunks(chunks, outputTokens)
	if err != nil {
		return nil, err
	}
	if sem, err = redactSemantic(sem); err != nil {
		return nil, err
	}
	after, err := c.measure(sem, c.tail, len(c.prefix), c.laterBudget)
	if err != nil {
		return nil, err
	}
	if err := c.checkEffective(after); err != nil {
		return nil, err
	}
	var lastCut *events.InputEvent
	if len(c.prefix) > 0 {
		lastCut = &c.prefix[len(c.prefix)-1]
	}
	cp, err := c.checkpoint(events.RepresentationPortable, sem, c.tail, lastCut, after, usage)
	if err != nil {
		return nil, err
	}
	return c.result(events.StatusCompacted, cp, c.tail, after, usage), nil
}

// checkTailAlone handles a lane where nothing older than the protected tail
// can be cut: if the tail with the previous summary
// does not fit the post-compaction target, no compaction can help.
func (c *compaction) checkTailAlone() error {
	after, err := c.measure(c.req.PreviousSemantic, c.tail, len(c.prefix), c.laterBudget)
	if err != nil {
		return err
	}
	target := floorRatio(c.limit, c.policy.PostCompactionTargetRatio)
	if after.EstimatedTokens > target {
		return errcode.WithDetails(errcode.CurrentInputItemTooLarge, "no safe history prefix can be compacted",
			map[string]any{"tokens_after": after.EstimatedTokens, "target_tokens": target})
	}
	if c.req.PreviousSemantic == nil {
		return c.nothingToCompact()
	}
	return nil
}

// nothingToCompact explains in numbers why no event could be cut: the
// recent tail keeps at least recent_tail_min_tokens, so a short lane has
// nothing older than its tail.
func (c *compaction) nothingToCompact() *errcode.Error {
	details := map[string]any{
		"events":                 len(c.req.Events),
		"tail_events":            len(c.tail),
		"cut_events":             len(c.prefix),
		"recent_tail_tokens":     c.tailBudget(),
		"recent_tail_min_tokens": c.policy.RecentTailMinTokens,
		"reason":                 "every event is in the recent tail or protected; the tail keeps recent_tail_tokens",
	}
	if c.before != nil {
		details["tokens_before"] = c.before.EstimatedTokens
	}
	return errcode.WithDetails(errcode.NothingToCompact, "no source events were selected", details)
}

// checkEffective refuses an ineffective summary: it is an error, never a
// checkpoint. The summary must bring the lane under the post-compaction
// target and reclaim both the minimum tokens and the minimum ratio.
func (c *compaction) checkEffective(after *ContextBudget) error {
	before := c.before.EstimatedTokens
	reclaimed := before - after.EstimatedTokens
	ratio := 0.0
	if before != 0 {
		ratio = float64(reclaimed) / float64(before)
	}
	if after.EstimatedTokens <= floorRatio(c.limit, c.policy.PostCompactionTargetRatio) &&
		reclaimed >= c.policy.MinimumTotalReclaimTokens && ratio >= c.policy.MinimumTotalReclaimRatio {
		return nil
	}
	return errcode.WithDetails(errcode.Ineffective, "compaction did not reclaim enough context",
		map[string]any{
			"tokens_before": before, "tokens_after": after.EstimatedTokens, "tokens_reclaimed": reclaimed,
			"target_tokens":                floorRatio(c.limit, c.policy.PostCompactionTargetRatio),
			"minimum_total_reclaim_tokens": c.policy.MinimumTotalReclaimTokens,
			"minimum_total_reclaim_ratio":  c.policy.MinimumTotalReclaimRatio,
		})
}

// summarizeChunks summarizes the chunks in order, each call given the
// previous call's semantic (docs/request.md, "Summaries and
// effectiveness"). It returns the final semantic and the provider usage
// list.
func (c *compaction) summarizeChunks(chunks [][]events.InputEvent, outputTokens int64) (*semantic.Semantic, []any, error) {
	previous := c.req.PreviousSemantic
	usages := []any{}
	repairsLeft := c.policy.MaximumSchemaRepairs
	var sources []semantic.SourceEvent
	var firstSeq int64
	for i, chunk := range chunks {
		if i == 0 {
			firstSeq = chunk[0].ChatSeq
		}
		for _, e := range chunk {
			sources = append(sources, sourceEvent(e))
		}
		coverage := semantic.Coverage{FirstChatSeq: firstSeq, LastChatSeq: chunk[len(chunk)-1].ChatSeq}
		payload := c.payload(previous, chunk, coverage, outputTokens)
		src := semantic.Sources{Events: sources, Coverage: coverage, MaxBytes: int(c.policy.SemanticMaxBytes), Lineage: c.req.PreviousSemantic}
		sem, usage, repaired, err := c.summarizeOne(payload, src, repairsLeft > 0)
		if err != nil {
			return nil, nil, err
		}
		if repaired {
			repairsLeft--
		}
		if usage != nil {
			usages = append(usages, usage)
		}
		previous = sem
	}
	if previous == nil {
		return nil, nil, c.nothingToCompact()
	}
	return previous, usages, nil
}

func sourceEvent(e events.InputEvent) semantic.SourceEvent {
	return semantic.SourceEvent{EventID: e.EventID, Role: e.Role, Content: e.Content, ChatSeq: e.ChatSeq, ArtifactIDs: e.ArtifactIDs}
}

func (c *compaction) payload(previous *semantic.Semantic, chunk []events.InputEvent, coverage semantic.Coverage, outputTokens int64) Payload {
	views := make([]EventView, len(chunk))
	for i := range chunk {
		views[i] = View(chunk[i])
	}
	return Payload{
		SchemaVersion:       PayloadSchemaVersion,
		CheckpointID:        c.req.RequestID,
		CoveredRange:        coverage,
		PreviousSemantic:    previous,
		Events:              views,
		Focus:               c.req.Focus,
		MaximumOutputTokens: int(outputTokens),
	}
}

// summarizeOne asks for one chunk's semantic and validates it; with a repair
// available, one invalid output is sent back once with the validator's
// error. usage is the chunk's usage entry (a list for a repaired chunk) or
// nil.
func (c *compaction) summarizeOne(p Payload, src semantic.Sources, canRepair bool) (sem *semantic.Semantic, usage any, repaired bool, err error) {
	first, err := c.summarize(p)
	if err != nil {
		return nil, nil, false, err
	}
	sem, verr := validateOutput(first.Output, src)
	if verr == nil {
		if first.Usage != nil {
			usage = usageValue(first.Usage)
		}
		return sem, usage, false, nil
	}
	if !canRepair {
		return nil, nil, false, verr
	}
	p.Repair = &Repair{InvalidOutput: jsonFriendly(first.Output), Error: RepairError{Type: verr.Code, Message: verr.Message, Details: verr.Details}}
	second, err := c.summarize(p)
	if err != nil {
		return nil, nil, false, err
	}
	if sem, verr = validateOutput(second.Output, src); verr != nil {
		return nil, nil, false, verr
	}
	usages := []any{}
	for _, u := range []*events.Usage{first.Usage, second.Usage} {
		if u != nil {
			usages = append(usages, usageValue(u))
		}
	}
	return sem, usages, true, nil
}

// jsonFriendly shows raw bytes to the summarizer as text, not base64.
func jsonFriendly(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

// summarize calls the Summarizer, typing its failures.
func (c *compaction) summarize(p Payload) (sum Summary, err error) {
	if c.summarizer == nil {
		return Summary{}, errcode.New(errcode.ProviderError, "compaction model failed: no summarizer")
	}
	defer func() {
		if r := recover(); r != nil {
			sum, err = Summary{}, errcode.WithDetails(errcode.ProviderError, "compaction model raised",
				map[string]any{"panic": fmt.Sprint(r)})
		}
	}()
	sum, err = c.summarizer.Summarize(c.ctx, p)
	if err != nil {
		if errcode.As(err) != nil {
			return Summary{}, err
		}
		// An untyped failure at the model boundary (a network error, a
		// timeout) may pass: the caller may retry it.
		e := errcode.Wrap(errcode.ProviderError, "compaction model failed", err)
		e.Retryable = true
		return Summary{}, e
	}
	return sum, nil
}

// validateOutput decodes a summarizer output and validates it against its
// sources (semantic.Validate: what it cites must be among them).
func validateOutput(out any, src semantic.Sources) (*semantic.Semantic, *errcode.Error) {
	sem, err := decodeOutput(out)
	if err == nil {
		err = semantic.Validate(sem, src)
	}
	if err != nil {
		if e := errcode.As(err); e != nil {
			return nil, e
		}
		return nil, errcode.Wrap(errcode.InvalidSemantic, "semantic output is invalid", err).With("rule", "schema")
	}
	return sem, nil
}

func decodeOutput(out any) (*semantic.Semantic, error) {
	switch x := out.(type) {
	case *semantic.Semantic:
		if x == nil {
			break
		}
		return semantic.Normalize(x)
	case semantic.Semantic:
		return semantic.Normalize(&x)
	case map[string]any:
		return semantic.Parse(x)
	case string:
		return decodeOutputText([]byte(x))
	case []byte:
		return decodeOutputText(x)
	case json.RawMessage:
		return decodeOutputText(x)
	}
	return nil, errcode.New(errcode.InvalidSemantic, "compaction output must be JSON data").With("rule", "json")
}

func decodeOutputText(b []byte) (*semantic.Semantic, error) {
	v, err := canonical.Decode(b)
	if errors.Is(err, canonical.ErrDuplicateKey) {
		return nil, errcode.Wrap(errcode.InvalidSemantic, "semantic output has duplicate fields", err).With("rule", "json")
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidSemantic, "compaction output is not JSON", err).With("rule", "json")
	}
	return semantic.Parse(v)
}

// redactSemantic scrubs secrets from a validated semantic so none enters a
// checkpoint.
func redactSemantic(sem *semantic.Semantic) (*semantic.Semantic, error) {
	redacted, _ := semantic.Redact(sem, redact.String)
	if redacted == nil {
		return nil, errcode.New(errcode.InvalidSemantic, "semantic output could not be redacted").With("rule", "canonical")
	}
	return redacted, nil
}

// measure renders sem and events, the lane's events from index first on
// as this compaction holds them, and measures the rendering with budget,
// which must not keep the bytes. The engine renders canonical_v1 itself
// from the lane's views, after them or into a pooled buffer reused once
// measured, since budgets keep only counts.
func (c *compaction) measure(sem *semantic.Semantic, laneEvents []events.InputEvent, first int,
	budget func(Rendered) (*ContextBudget, error)) (*ContextBudget, error) {
	r, pooled, err := c.render(sem, laneEvents, first)
	if err != nil {
		return nil, err
	}
	b, err := budget(r)
	if pooled != nil {
		renderBuffers.put(pooled, r.Bytes)
	}
	return b, err
}

// render calls the renderer, typing its failures. pooled is the pooled
// buffer holding r.Bytes when the engine rendered canonical_v1 itself.
func (c *compaction) render(sem *semantic.Semantic, laneEvents []events.InputEvent, first int) (r Rendered, pooled *[]byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, pooled, err = Rendered{}, nil, c.renderError("context renderer raised", "panic").With("panic", fmt.Sprint(p))
		}
	}()
	if _, ok := c.renderer.(canonicalRenderer); ok {
		return c.renderCanonical(sem, laneEvents, first)
	}
	r, err = c.renderer.Render(sem, laneEvents)
	if err != nil {
		if errcode.As(err) != nil {
			return Rendered{}, nil, err
		}
		e := c.renderError("context rendering failed", "error")
		e.Err = err
		return Rendered{}, nil, e
	}
	if r.Bytes == nil {
		return Rendered{}, nil, c.renderError("context renderer returned an invalid result", "result")
	}
	return r, nil, nil
}

// renderError is a compaction_render_error of the request's renderer.
func (c *compaction) renderError(message, rule string) *errcode.Error {
	name := c.req.Render
	if name == "" {
		name = RenderCanonicalV1
	}
	return errcode.Field(errcode.RenderError, message, "render", rule).With("value", name)
}

// renderCanonical renders canonical_v1 from the lane's views: the whole
// unprojected lane in place after them, other lanes into a pooled buffer.
func (c *compaction) renderCanonical(sem *semantic.Semantic, laneEvents []events.InputEvent, first int) (Rendered, *[]byte, error) {
	enc, err := c.encodeSemantic(sem)
	if err != nil {
		return Rendered{}, nil, renderFailure(err)
	}
	if first == 0 && len(laneEvents) == len(c.req.Events) && c.projected == nil {
		if r, ok := c.laneViews().renderInPlace(enc); ok {
			if c.counts != nil {
				r.views = c.views.spans()
			}
			return r, nil, nil
		}
	}
	bp := renderBuffers.get()
	var views []viewSpan
	if c.counts != nil { // the views' token counts are wanted
		views = make([]viewSpan, len(laneEvents))
	}
	b, err := appendCanonicalRendering(slices.Grow(*bp, renderedSizeHint(laneEvents)), enc, len(laneEvents),
		func(dst []byte, j int) ([]byte, error) {
			start := len(dst)
			dst, err := c.appendEventView(dst, &laneEvents[j], first+j)
			if views != nil {
				index, copyOf := first+j, -1
				if c.isProjected(index) {
					index, copyOf = -1, index
				}
				views[j] = viewSpan{start: start, end: len(dst), event: &laneEvents[j], index: index, copyOf: copyOf}
			}
			return dst, err
		})
	if err != nil {
		renderBuffers.put(bp, b)
		return Rendered{}, nil, err
	}
	return Rendered{Bytes: b, views: views}, bp, nil
}

// laneViews returns the views of the request's events, encoding them on
// first use.
func (c *compaction) laneViews() *laneViews {
	if c.views == nil {
		c.views = encodeViews(c.req.Events)
	}
	return c.views
}

func (c *compaction) releaseViews() {
	if c.views != nil {
		c.views.release()
		c.views = nil
	}
}

// isProjected reports whether the lane's event i was replaced by projection.
func (c *compaction) isProjected(i int) bool { return i < len(c.projected) && c.projected[i] }

// appendEventView appends the canonical view of e, the lane's event i as
// this compaction holds it: its encoded view unless projection replaced it.
func (c *compaction) appendEventView(dst []byte, e *events.InputEvent, i int) ([]byte, error) {
	if c.isProjected(i) {
		return appendView(dst, e)
	}
	view, err := c.laneViews().view(i)
	if err != nil {
		return dst, err
	}
	return append(dst, view...), nil
}

// laneView is the lane's event i's encoded view (nil when it has none),
// for counting its projected copy.
func (c *compaction) laneView(i int) []byte {
	view, err := c.laneViews().view(i)
	if err != nil {
		return nil
	}
	return view
}

// eventTokens is EstimatedTokens(*e) for e, the lane's event i as this
// compaction holds it, measured from its encoded view unless projected.
func (c *compaction) eventTokens(e *events.InputEvent, i int) (int64, error) {
	if e.TokenCount != nil && *e.TokenCount >= 0 || c.isProjected(i) {
		return EstimatedTokens(*e)
	}
	view, err := c.laneViews().view(i)
	if err != nil {
		return 0, errcode.Wrap(errcode.InvalidEvent, "event is not canonical JSON", err)
	}
	return int64(len(view)), nil
}

// projectedFlags marks the prefix events that manifest, which lists them
// in lane order and by their unique ids, records as projected; nil when
// none is.
func projectedFlags(prefix []events.InputEvent, manifest []events.ManifestEntry) []bool {
	if len(manifest) == 0 {
		return nil
	}
	flags := make([]bool, len(prefix))
	next := 0
	for i := range prefix {
		if next < len(manifest) && manifest[next].EventID == prefix[i].EventID {
			flags[i] = true
			next++
		}
	}
	return flags
}

// checkpoint builds the candidate checkpoint (subjects.md, Events). lastCut is the
// newest summarized event, or nil when nothing was cut.
func (c *compaction) checkpoint(representation string, sem *semantic.Semantic, retained []events.InputEvent,
	lastCut *events.InputEvent, after *ContextBudget, usage []any) (*events.Checkpoint, error) {
	laneEvents := c.req.Events
	first, last := laneEvents[0], laneEvents[len(laneEvents)-1]
	cp := &events.Checkpoint{
		CheckpointID:                         c.req.RequestID,
		ParentCheckpointID:                   c.req.ParentCheckpointID,
		ThreadID:                             c.req.ThreadID,
		RunID:                                c.req.RunID,
		RootTurnID:                           c.req.RootTurnID,
		RunAgentID:                           c.req.RunAgentID,
		CheckpointNamespace:                  c.req.CheckpointNamespace,
		Trigger:                              c.req.Trigger,
		Representation:                       representation,
		SourceChatSeqRange:                   events.Range{First: first.ChatSeq, Last: last.ChatSeq},
		ContextChatSeqHighWatermark:          last.ChatSeq,
		SourceLaneEventOrdinalRange:          events.Range{First: first.LaneEventOrdinal, Last: last.LaneEventOrdinal},
		ContextLaneEventOrdinalHighWatermark: last.LaneEventOrdinal,
		Semantic:                             sem,
		RehydrationState:                     c.req.RehydrationState,
		ProviderConnectionID:                 c.req.ProviderConnectionID,
		DestinationIdentityHash:              c.req.DestinationIdentityHash,
		AccountingMethod:                     c.before.Method,
		AccountingCounter:                    c.before.Counter,
		AccountingVersion:                    c.before.Version,
		AccountingProfileHash:                c.before.ProfileHash,
		CategoryBytes:                        c.before.CategoryBytes,
		CategoryTokens:                       c.before.Categories,
		TokensBefore:                         c.before.EstimatedTokens,
		TokensAfter:                          after.EstimatedTokens,
		TokensReclaimed:                      c.before.EstimatedTokens - after.EstimatedTokens,
		RetainedEventIDs:                     eventIDs(retained),
		ProjectionManifest:                   c.manifest,
		ProviderUsage:                        usage,
		ValidationStatus:                     events.ValidationStatusValid,
		CreatedAt:                            formatCreatedAt(c.now),
	}
	if cp.ProjectionManifest == nil {
		cp.ProjectionManifest = []events.ManifestEntry{}
	}
	switch {
	case lastCut != nil:
		cp.SummaryCoverageLastChatSeq = ptr(lastCut.ChatSeq)
		cp.SummaryCoverageLastLaneEventOrdinal = ptr(lastCut.LaneEventOrdinal)
	case c.req.PreviousSemantic != nil:
		cp.SummaryCoverageLastChatSeq = ptr(c.req.PreviousSemantic.Coverage.LastChatSeq)
	}
	if len(retained) > 0 {
		cp.RetainedFromChatSeq = ptr(retained[0].ChatSeq)
	}
	if sem != nil {
		enc, err := c.encodeSemantic(sem)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidSemantic, "semantic output is not canonical JSON", err).With("rule", "canonical")
		}
		h := canonical.HashBytes(enc)
		cp.SemanticHash = &h
		cp.ReuseSemanticEncoding(enc)
	}
	return cp, nil
}

func (c *compaction) result(status string, cp *events.Checkpoint, retained []events.InputEvent, after *ContextBudget, usage []any) *Result {
	return &Result{
		Status:             status,
		Checkpoint:         cp,
		TokensBefore:       c.before.EstimatedTokens,
		TokensAfter:        after.EstimatedTokens,
		TokensReclaimed:    c.before.EstimatedTokens - after.EstimatedTokens,
		SourceEventCount:   len(c.req.Events),
		RetainedEventCount: len(retained),
		RetainedEvents:     retained,
		ArtifactIDs:        uniqueArtifactIDs(c.req.Events),
		ProviderUsage:      usage,
		State:              c.state,
	}
}

func eventIDs(laneEvents []events.InputEvent) []string {
	ids := make([]string, len(laneEvents))
	for i, e := range laneEvents {
		ids[i] = e.EventID
	}
	return ids
}

func uniqueArtifactIDs(laneEvents []events.InputEvent) []string {
	seen := map[string]bool{}
	ids := []string{}
	for _, e := range laneEvents {
		for _, id := range e.ArtifactIDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}
