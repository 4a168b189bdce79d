package events

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// The liveness check Cairn's processes use on their NATS connections.
// nats.go's own default pings every 2 minutes, so a client whose server
// freezes (a paused VM, a stalled disk) waits minutes before it moves to
// another server, and every request it sends meanwhile times out on the
// dead connection. Pinging every 2 s and allowing 3 unanswered pings drops
// such a connection within 8 s.
const (
	DefaultPingInterval        = 2 * time.Second
	DefaultMaxPingsOutstanding = 3
)

// ConnOptions are the connection settings of a client of Cairn: how fast a
// frozen server is noticed, and TLS. The zero value pings as Cairn's
// processes do and uses no TLS beyond what a tls:// URL asks for.
type ConnOptions struct {
	// PingInterval is how often the client pings its server (0:
	// DefaultPingInterval).
	PingInterval time.Duration
	// MaxPingsOutstanding is how many pings may go unanswered before the
	// connection is dropped and made again to another server of the pool
	// (0: DefaultMaxPingsOutstanding).
	MaxPingsOutstanding int
	// TLSCA is a PEM file of the certificate authorities that sign the
	// servers' certificates (a private CA); setting it requires TLS.
	TLSCA string
	// TLSCert and TLSKey are PEM files of the client's certificate and key,
	// for servers that verify clients (mutual TLS); both or neither.
	TLSCert string
	TLSKey  string
}

// withDefaults fills the zero fields.
func (o ConnOptions) withDefaults() ConnOptions {
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.MaxPingsOutstanding == 0 {
		o.MaxPingsOutstanding = DefaultMaxPingsOutstanding
	}
	return o
}

// Validate reports settings no connection can use.
func (o ConnOptions) Validate() error {
	o = o.withDefaults()
	switch {
	case o.PingInterval < 0:
		return fmt.Errorf("events: ping interval %s is negative", o.PingInterval)
	case o.MaxPingsOutstanding < 0:
		return fmt.Errorf("events: max pings outstanding %d is negative", o.MaxPingsOutstanding)
	case (o.TLSCert == "") != (o.TLSKey == ""):
		return errors.New("events: a TLS client certificate needs its key, and a key its certificate")
	}
	return nil
}

// UsesTLS reports whether the options ask for TLS.
func (o ConnOptions) UsesTLS() bool { return o.TLSCA != "" || o.TLSCert != "" }

// StaleAfter is the longest a connection to a server that stopped answering
// stays up: MaxPingsOutstanding+1 ping intervals. It is also the bound of one
// write to the server, so that a write blocked on a frozen server cannot
// hold the connection past the check.
func (o ConnOptions) StaleAfter() time.Duration {
	o = o.withDefaults()
	return o.PingInterval * time.Duration(o.MaxPingsOutstanding+1)
}

// NATSOptions returns the nats.go options of o, to pass to nats.Connect with
// the application's own (name, credentials, reconnect handlers). Cairn's
// processes add nats.MaxReconnects(-1): a client that gives up reconnecting
// stops for good. The certificate files are read here, so that a missing
// or malformed file is reported before connecting, and again on every
// reconnect, so that renewed certificates are picked up.
func (o ConnOptions) NATSOptions() ([]nats.Option, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	opts := []nats.Option{
		nats.PingInterval(o.PingInterval),
		nats.MaxPingsOutstanding(o.MaxPingsOutstanding),
		nats.FlusherTimeout(o.StaleAfter()),
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	// The files are checked now: nats.go reports them only when it dials.
	var check nats.Options
	for _, opt := range opts {
		if err := opt(&check); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
	}
	return opts, nil
}
