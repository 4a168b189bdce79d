// Package engine decides how to compact a conversation lane; it performs no I/O.
//
// Compact is a pure function of a Request, a Summarizer and the time it is
// given: it measures the lane's context budget, keeps a safe recent tail,
// projects large tool outputs to their artifacts, summarizes the older prefix
// through the Summarizer, validates the summary against its sources and
// returns a candidate Checkpoint. Persisting and activating the checkpoint is
// the caller's business. The contract is subjects.md and docs/canonical-json.md.
package engine
