package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go"
)

// A NATS server that requires TLS and verifies client certificates against
// a private CA, configured by nats.conf's commented tls block: serve and a
// client command connect with --nats-tls-ca, --nats-tls-cert and
// --nats-tls-key (the client through CAIRN_NATS_TLS_*), and a client
// without a certificate of that CA is refused.
func TestServeAndClientsOverMutualTLS(t *testing.T) {
	files := testenv.TLS(t)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(exampleTLSBlock(t, files)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testenv.NATS(t, testenv.Options{ConfigFile: conf,
		ClientOptions: []nats.Option{nats.RootCAs(files.CA), nats.ClientCert(files.ClientCert, files.ClientKey)}})
	url := srv.URL()
	startServe(t, "--nats-url", url, "--nats-tls-ca", files.CA, "--nats-tls-cert", files.ClientCert, "--nats-tls-key", files.ClientKey)

	example := filepath.Join("..", "..", "examples", "coding-agent-lane.json")
	code, out, errOut := cliEnv(t, []string{"CAIRN_NATS_TLS_CA=" + files.CA, "CAIRN_NATS_TLS_CERT=" + files.ClientCert, "CAIRN_NATS_TLS_KEY=" + files.ClientKey},
		"request", "--nats-url", url, example)
	if code != 0 || !strings.Contains(out, `"kind":"activated"`) {
		t.Fatalf("request over mutual TLS: exit %d: %.300s %s", code, out, errOut)
	}
	laneShow := []string{"lane", "show", "--nats-url", url, "--json", "agent-coder/root"}
	for name, flags := range map[string][]string{
		"no client certificate":            {"--nats-tls-ca", files.CA},
		"a certificate of another CA":      {"--nats-tls-ca", files.CA, "--nats-tls-cert", files.ForeignCert, "--nats-tls-key", files.ForeignKey},
		"no private CA (the system roots)": {"--nats-tls-cert", files.ClientCert, "--nats-tls-key", files.ClientKey},
		"no TLS flags":                     nil,
	} {
		code, out, errOut := cli(t, append(append([]string{}, laneShow...), flags...)...)
		if code != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %.200q; want exit 1, nothing printed", name, code, out)
		}
		t.Logf("%s: %s", name, strings.TrimSpace(errOut))
	}
	if code, out, errOut := cli(t, append(laneShow, "--nats-tls-ca", files.CA, "--nats-tls-cert", files.ClientCert, "--nats-tls-key", files.ClientKey)...); code != 0 {
		t.Errorf("lane show over mutual TLS: exit %d: %s %s", code, out, errOut)
	}
}

// TLS flags without --nats-url, or a certificate without its key, are
// usage errors of serve, found before anything starts.
func TestServeRefusesTLSFlagsItCannotUse(t *testing.T) {
	for _, args := range [][]string{
		{"--nats-tls-ca", "ca.pem"},
		{"--nats-url", "nats://127.0.0.1:1", "--nats-tls-cert", "client.pem"},
	} {
		code, _, errOut := cli(t, append([]string{"serve", "--nats-listen", "none", "--data-dir", t.TempDir(), "--metrics-addr", "none"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "tls") && !strings.Contains(errOut, "TLS") {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and a message about TLS", args, code, errOut)
		}
	}
}

// exampleTLSBlock is the commented tls block of the repository's nats.conf,
// uncommented, with the test's files in place of the example paths.
func exampleTLSBlock(t *testing.T, files testenv.TLSFiles) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "# tls {" || len(block) > 0 {
			block = append(block, strings.TrimPrefix(line, "# "))
		}
		if line == "# }" && len(block) > 0 {
			break
		}
	}
	if len(block) == 0 {
		t.Fatal("nats.conf has no commented tls block")
	}
	conf := strings.NewReplacer(`"/etc/nats/server.pem"`, strconv.Quote(files.ServerCert), `"/etc/nats/server-key.pem"`, strconv.Quote(files.ServerKey),
		`"/etc/nats/ca.pem"`, strconv.Quote(files.CA)).Replace(strings.Join(block, "\n"))
	if strings.Contains(conf, "/etc/nats") {
		t.Fatalf("nats.conf's tls block names files the test does not replace:\n%s", conf)
	}
	return conf + "\n"
}

// cliEnv is cli with extra environment variables.
func cliEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}
