package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// errConnClosed is why serve stops when its NATS connection has closed for
// good: nats.go does not reconnect after a protocol error (e.g. "maximum
// control line exceeded") or a repeated authorization error, and every
// consumer, watcher and store is bound to that one connection. Exiting lets
// the orchestrator restart the process with a fresh connection.
var errConnClosed = errors.New("nats connection closed for good")

// errLoopEnded is why serve stops when one of its run loops returned
// without being asked to.
var errLoopEnded = errors.New("run loop ended")

// life tracks whether serve can still do its work. A fatal failure (the
// connection closed, a run loop ended) ends ctx, so that the other loops
// stop too, and is kept as the reason serve returns and /healthz fails. A
// failure after shutdown has begun is not fatal: it is part of stopping.
type life struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	log    *slog.Logger

	mu    sync.Mutex
	fatal error
}

func newLife(parent context.Context, log *slog.Logger) *life {
	ctx, cancel := context.WithCancel(parent)
	return &life{parent: parent, ctx: ctx, cancel: cancel, log: log}
}

// fail ends serve's work with cause, unless serve is already stopping.
func (l *life) fail(cause error) {
	l.mu.Lock()
	first := l.fatal == nil && l.ctx.Err() == nil
	if first {
		l.fatal = cause
	}
	l.mu.Unlock()
	if first {
		l.log.Error("cairn cannot go on; stopping so that the process exits and is restarted", "error", cause, "exit_code", 1)
		l.cancel()
	}
}

// err is the fatal failure, or nil while serve is healthy or stopping
// because it was asked to.
func (l *life) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// stop releases the context; call it when serve returns.
func (l *life) stop() { l.cancel() }

// connClosed is the connection's ClosedHandler: a connection that closes
// while serve still runs is fatal.
func (l *life) connClosed(nc *nats.Conn) {
	cause := errConnClosed
	if err := nc.LastError(); err != nil {
		cause = fmt.Errorf("%w: %w", errConnClosed, err)
	}
	l.fail(cause)
}

// run runs one of serve's loops on the life's context. A loop that returns
// while serve should still run is fatal, with or without an error.
func (l *life) run(name string, loop func(context.Context) error) error {
	err := loop(l.ctx)
	if l.ctx.Err() == nil {
		if err == nil {
			err = errLoopEnded
		}
		l.fail(fmt.Errorf("%s stopped: %w", name, err))
	}
	return err
}

// check is the /healthz condition of the life.
func (l *life) check(context.Context) error { return l.err() }
