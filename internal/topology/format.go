package topology

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn/errcode"
	"github.com/nats-io/nats.go/jetstream"
)

// Storage formats (docs/architecture.md, Stored data across versions).
//
// Every stream, bucket and object store Cairn owns records the format of
// its records under FormatKey. Format 1 is the only one so far. A release
// whose records an older Cairn would misread raises StoreFormat, reads
// every older format, and moves an older store in Ensure; the refusal of a
// newer marker (checkFormat) is what protects the way back.
const (
	// StoreFormat is the format this Cairn writes and the newest it reads.
	StoreFormat = 1
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
			fmt.Sprintf("stream %s holds Cairn store format %q, and this Cairn reads formats up to %d: "+
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
	md := map[string]string{}
	if existing != nil {
		maps.Copy(md, existing.Metadata)
	}
	maps.DeleteFunc(md, func(k, _ string) bool { return strings.HasPrefix(k, "_nats.") })
	md[FormatKey] = strconv.Itoa(StoreFormat)
	return md
}
