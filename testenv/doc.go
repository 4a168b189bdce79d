// Package testenv starts real dependencies for Cairn's tests: embedded NATS JetStream and a fake OpenAI-compatible server.
//
// Every constructor takes a testing.TB and registers its own cleanup, so a
// test never shuts anything down by hand. Nothing here reaches beyond the
// loopback interface.
package testenv
