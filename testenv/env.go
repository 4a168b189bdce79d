package testenv

import "testing"

// Env is the usual pair of dependencies of a Cairn integration test.
type Env struct {
	NATS   *Server
	OpenAI *FakeOpenAI
}

// New starts an embedded JetStream server configured by o and a fake
// OpenAI server; both stop when the test ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	return &Env{NATS: NATS(t, o), OpenAI: OpenAI(t)}
}
