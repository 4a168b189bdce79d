package events

// WaitOutcomeWork returns how many events WaitOutcome calls have read the
// request_id of, and how many they decoded in full, since the process began.
func WaitOutcomeWork() (envelopesRead, decoded int64) { return envelopes.Load(), decodes.Load() }

// EnvelopeRequestID exposes envelopeRequestID to the tests.
var EnvelopeRequestID = envelopeRequestID
