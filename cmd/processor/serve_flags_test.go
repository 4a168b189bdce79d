package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Options the streams and buckets cannot take are refused before anything
// starts: a usage error (exit 2) that names the flag, not a failure after
// the embedded server came up.
func TestServeRefusesStoreOptionsUpFront(t *testing.T) {
	for _, args := range [][]string{
		{"--ledger-ttl", "30m"},
		{"--replicas", "0"},
		{"--duplicate-window", "500ms"},
		{"--duplicate-window", "2h", "--ledger-ttl", "1h"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "--nats-listen", "none", "--data-dir", t.TempDir()}, args...), stdio{in: strings.NewReader(""), out: &out, err: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), "--duplicate-window") {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and a message naming the flag", args, code, errOut.String())
		}
	}
}
