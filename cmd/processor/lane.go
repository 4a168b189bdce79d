package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/inspect"
	"github.com/cairnhq/cairn/internal/lanes"
	"github.com/nats-io/nats.go/jetstream"
)

func init() {
	register(command{name: "lane", summary: "lane show AGENT/NAMESPACE: print a lane's head and active checkpoint", run: runLane})
}

// laneView is what `lane show` prints (inspect.Lane).
type laneView = inspect.LaneView

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
		view, err := inspect.Lane(ctx, store, lane, *full)
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
