// Package testenv starts real dependencies for Cairn's tests: embedded NATS JetStream (one server, an in-process cluster or a cluster of separate processes, with or without Cairn's streams and buckets) and a fake OpenAI-compatible server.
//
// Every constructor takes a testing.TB and registers its own cleanup, so a
// test never shuts anything down by hand. Nothing here reaches beyond the
// loopback interface.
package testenv
