package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "lane", summary: "lane show AGENT/NAMESPACE: print a lane's head and active checkpoint", run: runLane})
}

// laneView is what `lane show` prints: the head and a digest of its active
// checkpoint (the checkpoint itself with --full).
type laneView struct {
	Lane               lanes.Lane      `json:"lane"`
	Key                string          `json:"key"`
	Revision           uint64          `json:"revision"`
	Generation         int64           `json:"generation"`
	CheckpointID       string          `json:"checkpoint_id"`
	CheckpointHash     string          `json:"checkpoint_hash"`
	ParentCheckpointID *string         `json:"parent_checkpoint_id"` // null for a lane's first checkpoint
	SemanticHash       string          `json:"semantic_hash,omitempty"`
	PendingEvents      int             `json:"pending_events"`
	UpdatedAt          time.Time       `json:"updated_at"`
	Checkpoint         *checkpointInfo `json:"checkpoint,omitempty"`
}

// checkpointInfo is the part of a checkpoint a person checks first.
type checkpointInfo struct {
	Trigger          string `json:"trigger"`
	Representation   string `json:"representation"`
	TokensBefore     int64  `json:"tokens_before"`
	TokensAfter      int64  `json:"tokens_after"`
	TokensReclaimed  int64  `json:"tokens_reclaimed"`
	AccountingMethod string `json:"accounting_method"`
	// AccountingCounter is the count the method stood on (utf8_bytes, an
	// encoding such as o200k_base, approx_v1, reported_usage; subjects.md,
	// Token accounting); null in a checkpoint that does not record it.
	AccountingCounter *string        `json:"accounting_counter"`
	RetainedEvents    int            `json:"retained_events"`
	Semantic          map[string]int `json:"semantic_entries,omitempty"`
	// Objective is the texts of the summary's objective entries.
	Objective []string         `json:"objective,omitempty"`
	CreatedAt string           `json:"created_at"`
	Full      *json.RawMessage `json:"full,omitempty"`
}

func runLane(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] != "show" {
		return usageError(io, "usage: processor lane show [flags] AGENT/NAMESPACE")
	}
	fs := newFlagSet("lane show", "lane show [flags] AGENT/NAMESPACE\n\nPrints the lane's head (generation, active checkpoint, pending events) and a\ndigest of its active checkpoint. Use --agent and --namespace for ids that contain '/'.", io)
	var nf natsFlags
	nf.register(fs)
	agent := fs.String("agent", "", "the lane's run_agent_id (instead of AGENT/NAMESPACE)")
	namespace := fs.String("namespace", "", "the lane's checkpoint_namespace (instead of AGENT/NAMESPACE)")
	full := fs.Bool("full", false, "include the whole active checkpoint")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	asJSON := fs.Bool("json", !isTerminal(io.out), "print JSON (default when stdout is not a terminal)")
	if ok, code := parseFlags(fs, args[1:], natsEnv); !ok {
		return code
	}
	lane, err := laneArg(fs.Args(), *agent, *namespace)
	if err != nil {
		return usageError(io, "processor lane show: %v", err)
	}
	return nf.run(ctx, "lane", *timeout, io, func(ctx context.Context, js jetstream.JetStream) int {
		store, err := openLanes(ctx, js)
		if err != nil {
			return fail(io, err)
		}
		view, err := showLane(ctx, store, lane, *full)
		if err != nil {
			return fail(io, err)
		}
		if *asJSON {
			printJSON(io.out, view)
		} else {
			printLane(io.out, view)
		}
		return 0
	})
}

// laneArg reads the lane from AGENT/NAMESPACE or from the two flags.
func laneArg(args []string, agent, namespace string) (lanes.Lane, error) {
	switch {
	case len(args) == 0 && agent != "" && namespace != "":
		return lanes.Lane{RunAgentID: agent, CheckpointNamespace: namespace}, nil
	case len(args) == 1 && agent == "" && namespace == "":
		a, n, ok := strings.Cut(args[0], "/")
		if !ok || a == "" || n == "" {
			return lanes.Lane{}, fmt.Errorf("want AGENT/NAMESPACE, got %q", args[0])
		}
		return lanes.Lane{RunAgentID: a, CheckpointNamespace: n}, nil
	}
	return lanes.Lane{}, fmt.Errorf("name the lane once: AGENT/NAMESPACE, or --agent and --namespace")
}

// showLane reads the lane's head and its active checkpoint.
func showLane(ctx context.Context, store *lanes.Store, lane lanes.Lane, full bool) (*laneView, error) {
	key, err := lane.Key()
	if err != nil {
		return nil, err
	}
	head, rev, err := store.Head(ctx, lane)
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, errcode.WithDetails(errcode.InvalidRequest, "the lane has no head yet",
			map[string]any{"run_agent_id": lane.RunAgentID, "checkpoint_namespace": lane.CheckpointNamespace, "key": key})
	}
	view := &laneView{
		Lane: lane, Key: key, Revision: rev, Generation: head.Generation,
		CheckpointID: head.CheckpointID, CheckpointHash: head.HeadHash,
		ParentCheckpointID: optional(head.ParentCheckpointID), SemanticHash: head.SemanticHash,
		PendingEvents: len(head.Outbox), UpdatedAt: head.UpdatedAt,
	}
	cp, err := store.GetCheckpoint(ctx, head.CheckpointID)
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if view.Checkpoint, err = digestCheckpoint(cp.Body, full); err != nil {
			return nil, err
		}
	}
	return view, nil
}

// digestCheckpoint reads the fields of checkpointInfo from a stored body.
func digestCheckpoint(body json.RawMessage, full bool) (*checkpointInfo, error) {
	var c struct {
		checkpointInfo
		RetainedEventIDs []string                   `json:"retained_event_ids"`
		Semantic         map[string]json.RawMessage `json:"semantic"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, errcode.Wrap(errcode.Internal, "stored checkpoint is corrupt", err)
	}
	info := c.checkpointInfo
	info.RetainedEvents = len(c.RetainedEventIDs)
	info.Objective = objectiveTexts(c.Semantic["objective"])
	for name, raw := range c.Semantic {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			if info.Semantic == nil {
				info.Semantic = map[string]int{}
			}
			info.Semantic[name] = len(list)
		}
	}
	if full {
		info.Full = &body
	}
	return &info, nil
}

func printLane(w io.Writer, v *laneView) {
	fmt.Fprintf(w, "lane        %s/%s (key %s)\n", v.Lane.RunAgentID, v.Lane.CheckpointNamespace, v.Key)
	fmt.Fprintf(w, "generation  %d (revision %d, updated %s)\n", v.Generation, v.Revision, v.UpdatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "checkpoint  %s\n            hash %s\n", v.CheckpointID, v.CheckpointHash)
	fmt.Fprintf(w, "parent      %s\n", deref(v.ParentCheckpointID, "(none)"))
	if v.PendingEvents > 0 {
		fmt.Fprintf(w, "pending     %d events not yet relayed\n", v.PendingEvents)
	}
	c := v.Checkpoint
	if c == nil {
		fmt.Fprintln(w, "(the active checkpoint is not in the checkpoints bucket)")
		return
	}
	fmt.Fprintf(w, "trigger     %s, %s, created %s\n", c.Trigger, c.Representation, c.CreatedAt)
	fmt.Fprintf(w, "tokens      %d before, %d after, %d reclaimed (%s, counter %s)\n", c.TokensBefore, c.TokensAfter, c.TokensReclaimed, c.AccountingMethod, deref(c.AccountingCounter, "(none)"))
	fmt.Fprintf(w, "retained    %d events\n", c.RetainedEvents)
	for _, name := range slices.Sorted(maps.Keys(c.Semantic)) {
		fmt.Fprintf(w, "semantic    %-20s %d\n", name, c.Semantic[name])
	}
	for _, text := range c.Objective {
		fmt.Fprintf(w, "objective   %s\n", strings.Join(strings.Fields(text), " "))
	}
	if c.Full != nil {
		fmt.Fprintf(w, "%s\n", *c.Full)
	}
}

// optional is s, or nil when s is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// objectiveTexts reads the text of each objective entry of a stored
// semantic (none when it has no objective).
func objectiveTexts(raw json.RawMessage) []string {
	var entries []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	texts := make([]string, 0, len(entries))
	for _, e := range entries {
		texts = append(texts, e.Text)
	}
	return texts
}
