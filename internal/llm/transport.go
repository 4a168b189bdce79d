package llm

import (
	"errors"
	"io"
	"net/http"
)

// errResponseTooLarge ends the read of a reply body longer than
// Config.MaxResponseBytes; such a reply is a provider fault, not retried.
var errResponseTooLarge = errors.New("provider reply exceeds the response size limit")

// limitedClient returns a copy of base (pooledClient(idle) when nil) whose
// response bodies fail with errResponseTooLarge past limit bytes.
func limitedClient(base *http.Client, limit int64, idle int) *http.Client {
	if base == nil {
		base = pooledClient(idle)
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &limitedTransport{next: rt, limit: limit}
	return &c
}

// pooledClient is a client whose transport is http.DefaultTransport's
// settings (proxy from the environment, dial and TLS timeouts, HTTP/2) with
// idle connections kept for up to idle calls at once. The default transport
// keeps two per host, so a processor with dozens of workers would close and
// reopen connections on every model call. A program that replaced
// http.DefaultTransport with a RoundTripper of its own keeps it as it is.
func pooledClient(idle int) *http.Client {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Client{Transport: http.DefaultTransport}
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = idle
	t.MaxIdleConns = max(t.MaxIdleConns, idle)
	return &http.Client{Transport: t}
}

type limitedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(r)
	if err != nil || res.Body == nil {
		return res, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.limit}
	return res, nil
}

// limitedBody reads at most left bytes, then fails instead of truncating
// silently.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Probe one byte: a body of exactly the limit is fine.
		var probe [1]byte
		if n, _ := b.rc.Read(probe[:]); n > 0 {
			return 0, errResponseTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
