package llm

import (
	"errors"
	"io"
	"net/http"
)

// errResponseTooLarge ends the read of a reply body longer than
// Config.MaxResponseBytes; such a reply is a provider fault, not retried.
var errResponseTooLarge = errors.New("provider reply exceeds the response size limit")

// limitedClient returns a copy of base (http.DefaultClient when nil) whose
// response bodies fail with errResponseTooLarge past limit bytes.
func limitedClient(base *http.Client, limit int64) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &limitedTransport{next: rt, limit: limit}
	return &c
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
