package topology

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn/internal/errcode"
	"github.com/nats-io/nats.go/jetstream"
)

// Storage formats (docs/architecture.md, Stored data across versions).
//
// Format 1 is what releases before the marker wrote (up to commit
// 45f7c3e); their streams and buckets carry no FormatKey. Format 2 is the
// first that records itself: its records are format 1's plus the shapes
// the lean commit path adds (a checkpoint that carries its plan, a harvest
// job as a pointer), and a format 2 Cairn reads both. Format 3 lets a
// local summarizer's request skip the ledger on its first delivery: every
// request id the ledger holds has a record in the checkpoints bucket (its
// checkpoint, or a marker, lanes.Checkpoint.OutcomeInLedger), and an
// activation of such a request may leave no ledger entry. Ensure moves an
// older store to format 3 by marking its ledger's ids (markLedger).
// Format 4 stores a checkpoint's bytes once, in its record: the record's
// plan, the lane head and the request ledger store their activated event
// citing it (lanes.Checkpoint.PlanCitesCheckpoint, lanes.Head.OutboxCites,
// ledger.Entry.PlanCitesCheckpoint and OutcomeCitesCheckpoint), which a
// format 3 Cairn would publish with a null checkpoint; every older record
// reads as it is, so moving to 4 rewrites nothing. A store is
// moved to a new format only by raising StoreFormat in a release that
// reads every older one.
const (
	// StoreFormat is the format this Cairn writes and the newest it reads.
	StoreFormat = 4
	// FormatKey names the marker in the metadata of every stream, bucket
	// and object store Cairn owns.
	FormatKey = "cairn_store_format"
	// CodeUnsupportedStoreFormat is the code of Ensure's refusal to start
	// on a store written by a newer Cairn. It is a start-up error, never in
	// an event, so subjects.md lists it under "Start-up errors", not among
	// the wire codes.
	CodeUnsupportedStoreFormat = "unsupported_store_format"
)

// checkFormat refuses stores whose marker this Cairn cannot honour: a
// format newer than StoreFormat, or a marker that is not a format number
// (written by nothing Cairn knows, so nothing it may overwrite).
func checkFormat(names []string, existing map[string]*jetstream.StreamConfig) error {
	for _, name := range names {
		cfg := existing[name]
		if cfg == nil {
			continue
		}
		found, ok := cfg.Metadata[FormatKey]
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(found); err == nil && n >= 1 && n <= StoreFormat {
			continue
		}
		return errcode.WithDetails(CodeUnsupportedStoreFormat,
			fmt.Sprintf("stream %s holds Cairn store format %q, and this Cairn reads formats 1 to %d: "+
				"the data was written by a newer Cairn. Upgrade Cairn to that release or a later one, "+
				"or point this one at another store (--data-dir, --nats-url or another account); nothing was changed",
				name, found, StoreFormat),
			map[string]any{"stream": name, "found": found, "supported": StoreFormat})
	}
	return nil
}

// withFormat returns the metadata to write over existing: its entries, so
// that an operator's keys survive the update, with Cairn's marker set. The
// server's own keys (_nats.*) are left for the server to fill in.
func withFormat(existing *jetstream.StreamConfig) map[string]string {
	md := keepFormat(existing)
	md[FormatKey] = strconv.Itoa(StoreFormat)
	return md
}

// keepFormat is withFormat without changing the marker: for a store whose
// upgrade has yet to run, so that a start that stops before it is done
// runs it again.
func keepFormat(existing *jetstream.StreamConfig) map[string]string {
	md := map[string]string{}
	if existing != nil {
		maps.Copy(md, existing.Metadata)
	}
	maps.DeleteFunc(md, func(k, _ string) bool { return strings.HasPrefix(k, "_nats.") })
	return md
}

// formatOf is the format an existing stream records: 1 without a marker.
func formatOf(existing *jetstream.StreamConfig) int {
	n, err := strconv.Atoi(existing.Metadata[FormatKey])
	if err != nil {
		return 1
	}
	return n
}
