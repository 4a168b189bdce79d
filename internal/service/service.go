// Package service answers Cairn's questions over NATS as a micro service
// (status of a request, a lane's head, a request's validation), so that a
// client in any language can ask them.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cairnhq/cairn/errcode"
	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/internal/inspect"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Name and Version identify the service in `nats micro ls`; Version is
// the version of its subjects and shapes, not of the build.
const (
	Name    = "cairn"
	Version = "1.0.0"
)

// Bounds of one ask. A status or lane ask is a few ids; a validate ask is
// a request body, bounded by the server's max_payload.
const (
	maxQueryBytes   = 4 << 10
	queryTimeout    = 5 * time.Second
	validateTimeout = 30 * time.Second
	// Each endpoint answers one ask at a time per process (micro calls
	// its handler in order); these bound the asks queued behind it. Asks
	// beyond them are dropped and time out at the asker.
	queuedQueries   = 1024
	queuedValidates = 16
)

// Config is what the service answers from.
type Config struct {
	Recorder *Recorder
	Lanes    *lanes.Store
	// LoadEvents reads an events_object for validate (nil: events in an
	// object are not checked).
	LoadEvents inspect.EventsLoader
	// Build is the build's version, shown in the service's metadata.
	Build  string
	Logger *slog.Logger
	// Now is the clock validate checks deadlines against (time.Now).
	Now func() time.Time
}

// Start adds the service to nc. Stop it before draining nc.
func Start(nc *nats.Conn, cfg Config) (micro.Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name:        Name,
		Version:     Version,
		Description: "Cairn: what became of a request, a lane's head, what a request would become",
		Metadata:    map[string]string{"build": cfg.Build},
		ErrorHandler: func(_ micro.Service, e *micro.NATSError) {
			cfg.Logger.Warn("service: subscription error (asks dropped)", "subject", e.Subject, "error", e.Description)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	h := &handlers{cfg: cfg, maxBody: int(nc.MaxPayload())}
	group := svc.AddGroup(events.ServicePrefix)
	endpoints := []struct {
		name    string
		handler micro.HandlerFunc
		queued  int
		bytes   int
		about   string
	}{
		{"status", h.status, queuedQueries, queuedQueries * maxQueryBytes, "what became of a request: {request_id, content_hash?} or {stream_sequence}"},
		{"lane", h.lane, queuedQueries, queuedQueries * maxQueryBytes, "a lane's head and active checkpoint: {run_agent_id, checkpoint_namespace, full?}"},
		{"validate", h.validate, queuedValidates, queuedValidates * h.maxBody, "what the processor would do with a request body"},
	}
	for _, e := range endpoints {
		err := group.AddEndpoint(e.name, e.handler,
			micro.WithEndpointPendingLimits(e.queued, e.bytes),
			micro.WithEndpointMetadata(map[string]string{"description": e.about}))
		if err != nil {
			_ = svc.Stop()
			return nil, fmt.Errorf("service: endpoint %s: %w", e.name, err)
		}
	}
	return svc, nil
}

type handlers struct {
	cfg     Config
	maxBody int
}

func (h *handlers) status(req micro.Request) {
	var q events.StatusQuery
	if !h.decode(req, &q) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	reply, err := h.cfg.Recorder.Status(ctx, q)
	if err != nil {
		h.fail(req, err)
		return
	}
	body, err := encodeStatus(reply)
	h.respond(req, body, err)
}

// encodeStatus is json.Marshal of a status reply without its second pass
// over the outcome: the event is JSON as the processor encoded it, and
// json.Marshal would scan its tens of kilobytes again to check it.
func encodeStatus(r *events.StatusReply) ([]byte, error) {
	head := *r
	head.Outcome = nil
	body, err := json.Marshal(head)
	if err != nil || r.Outcome == nil {
		return body, err
	}
	o := r.Outcome
	subject, err := json.Marshal(o.Subject)
	if err != nil {
		return nil, err
	}
	eventID, err := json.Marshal(o.EventID)
	if err != nil {
		return nil, err
	}
	const null = `null}`
	out := make([]byte, 0, len(body)+len(subject)+len(eventID)+len(o.Event)+48)
	out = append(out, body[:len(body)-len(null)]...)
	out = append(out, `{"subject":`...)
	out = append(out, subject...)
	out = append(out, `,"event_id":`...)
	out = append(out, eventID...)
	out = append(out, `,"event":`...)
	out = append(out, o.Event...)
	return append(out, `}}`...), nil
}

// laneQuery names a lane, as `lane show` does.
type laneQuery struct {
	RunAgentID          string `json:"run_agent_id"`
	CheckpointNamespace string `json:"checkpoint_namespace"`
	Full                bool   `json:"full,omitempty"`
}

func (h *handlers) lane(req micro.Request) {
	var q laneQuery
	if !h.decode(req, &q) {
		return
	}
	lane := lanes.Lane{RunAgentID: q.RunAgentID, CheckpointNamespace: q.CheckpointNamespace}
	if err := checkLaneQuery(lane); err != nil {
		h.answer(req, nil, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	view, err := inspect.Lane(ctx, h.cfg.Lanes, lane, q.Full)
	h.answer(req, view, err)
}

// checkLaneQuery names the first of the lane's ids that is missing or not
// a valid id.
func checkLaneQuery(lane lanes.Lane) error {
	for _, id := range []struct{ field, value string }{{"run_agent_id", lane.RunAgentID}, {"checkpoint_namespace", lane.CheckpointNamespace}} {
		switch {
		case id.value == "":
			return errcode.Field(errcode.InvalidServiceRequest, id.field+" is required", id.field, "required")
		case !events.ValidName(id.value):
			return errcode.Field(errcode.InvalidServiceRequest, id.field+" is not a valid id: 1..200 bytes of UTF-8 without control characters", id.field, "pattern")
		}
	}
	return nil
}

func (h *handlers) validate(req micro.Request) {
	body := req.Data()
	if len(body) > h.maxBody {
		h.fail(req, errcode.WithDetails(errcode.PayloadTooLarge, "the request is larger than the server's max_payload",
			map[string]any{"bytes": len(body), "limit": h.maxBody}))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), validateTimeout)
	defer cancel()
	h.answer(req, inspect.Validate(ctx, body, h.cfg.LoadEvents, h.cfg.Now()), nil)
}

// decode reads a bounded JSON query with no unknown fields into q, or
// answers the error and returns false.
func (h *handlers) decode(req micro.Request, q any) bool {
	data := req.Data()
	if len(data) > maxQueryBytes {
		h.fail(req, errcode.WithDetails(errcode.PayloadTooLarge, "the query is too large",
			map[string]any{"field": "$", "rule": "range", "bytes": len(data), "limit": maxQueryBytes}))
		return false
	}
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.DisallowUnknownFields()
	if err := d.Decode(q); err != nil {
		h.fail(req, errcode.WithDetails(errcode.InvalidServiceRequest, "the query is not a JSON object of the endpoint's fields",
			map[string]any{"field": "$", "rule": "json", "cause": err.Error()}))
		return false
	}
	if d.More() {
		h.fail(req, errcode.Field(errcode.InvalidServiceRequest, "the query holds more than one JSON value", "$", "json"))
		return false
	}
	return true
}

// answer replies with v as JSON, or with err as an error reply.
func (h *handlers) answer(req micro.Request, v any, err error) {
	if err != nil {
		h.fail(req, err)
		return
	}
	body, err := json.Marshal(v)
	h.respond(req, body, err)
}

// respond sends an encoded answer that fits a message.
func (h *handlers) respond(req micro.Request, body []byte, err error) {
	if err != nil {
		h.fail(req, errcode.Wrap(errcode.Internal, "encode the answer", err))
		return
	}
	if len(body) > h.maxBody {
		h.fail(req, errcode.WithDetails(errcode.PayloadTooLarge, "the answer is larger than the server's max_payload",
			map[string]any{"bytes": len(body), "limit": h.maxBody}))
		return
	}
	if err := req.Respond(body); err != nil {
		h.cfg.Logger.Warn("service: reply not sent", "subject", req.Subject(), "error", err)
	}
}

// fail answers a typed error: micro's error headers (a status-like code
// and the message) and the error as the JSON body.
func (h *handlers) fail(req micro.Request, err error) {
	if errcode.As(err) == nil && isTimeout(err) {
		unavailable := errcode.WithDetails(errcode.ProviderUnavailable, "Cairn's storage did not answer in time", map[string]any{"cause": err.Error()})
		unavailable.Retryable, unavailable.Err = true, err
		err = unavailable
	}
	e, details := inspect.TypedError(err)
	typed := *e
	typed.Details = details
	if typed.Code == errcode.Internal || errcode.As(err) == nil {
		h.cfg.Logger.Warn("service: ask failed", "subject", req.Subject(), "error", err)
	}
	body, merr := json.Marshal(events.ServiceErrorReply{Error: &typed})
	if merr != nil {
		body = nil
	}
	if rerr := req.Error(statusOf(typed.Code), headerText(typed.Message), body); rerr != nil {
		h.cfg.Logger.Warn("service: error reply not sent", "subject", req.Subject(), "error", rerr)
	}
}

// statusOf is the Nats-Service-Error-Code of a failure: 400 for a bad ask,
// 404 for a lane that has no head, 413 for a body over the bound, 503 when
// a store did not answer in time, 500 otherwise.
func statusOf(code string) string {
	switch code {
	case errcode.InvalidServiceRequest:
		return "400"
	case errcode.LaneNotFound:
		return "404"
	case errcode.PayloadTooLarge:
		return "413"
	case errcode.ProviderUnavailable:
		return "503"
	}
	return "500"
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// maxHeaderText bounds the message carried in Nats-Service-Error.
const maxHeaderText = 256

// headerText is a message fit for a header: one line, bounded, never
// empty (micro requires a description).
func headerText(message string) string {
	line := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, message)
	if len(line) > maxHeaderText {
		line = strings.ToValidUTF8(line[:maxHeaderText], "") + "…"
	}
	if strings.TrimSpace(line) == "" {
		return "error"
	}
	return line
}
