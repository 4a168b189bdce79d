// Package llm calls OpenAI-compatible chat completion endpoints with one retry policy.
package llm

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"
)

// DefaultBaseURL is the API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Bounds on the retry knobs, so a misconfiguration cannot retry forever.
const (
	maxAttemptsLimit = 20
	maxBackoffLimit  = 10 * time.Minute
	maxResponseLimit = 1 << 30
)

// MaxIdleConns is the largest Config.IdleConns.
const MaxIdleConns = 4096

// Config configures a Client. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1/". Empty means
	// DefaultBaseURL. FromEnv fills it from OPENAI_BASE_URL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	// FromEnv fills it from OPENAI_API_KEY.
	APIKey string
	// Model names the model for every request. Required.
	Model string
	// MaxAttempts bounds the HTTP attempts of one Complete call, the first
	// included: 1..20, default 4. A json_schema fallback does not count.
	MaxAttempts int
	// InitialBackoff is the first retry wait before jitter (default 500ms).
	InitialBackoff time.Duration
	// MaxBackoff caps one computed retry wait (default 20s, at most 10m).
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest server-requested Retry-After a call will
	// honour by waiting; a longer one ends the call with provider_unavailable
	// so the caller can reschedule (default 60s).
	MaxRetryAfter time.Duration
	// Timeout bounds one Complete call, retries and waits included; 0 means
	// only the caller's context and Request.Deadline bound it (default 120s).
	Timeout time.Duration
	// AttemptTimeout bounds one HTTP attempt, so a hung attempt is retried;
	// 0 means no per-attempt bound (default 0).
	AttemptTimeout time.Duration
	// MaxResponseBytes bounds one reply body; a longer reply fails with
	// compaction_provider_error (default 8 MiB, at most 1 GiB).
	MaxResponseBytes int64
	// IdleConns is how many idle connections to the endpoint are kept for
	// reuse: 1..4096, default 64. Set it to at least the number of calls
	// made at once, or connections beyond it are closed after each call and
	// the next call pays for a new one (a TLS handshake to a remote API).
	// It applies only to the client New builds, not to HTTPClient.
	IdleConns int
	// HTTPClient, when set, carries the requests; its Transport is wrapped,
	// not modified. Nil means a client of Cairn's own that keeps IdleConns
	// connections.
	HTTPClient *http.Client
}

// DefaultConfig returns a Config with every default set and no endpoint,
// key or model.
func DefaultConfig() Config {
	return Config{
		MaxAttempts:      4,
		InitialBackoff:   500 * time.Millisecond,
		MaxBackoff:       20 * time.Second,
		MaxRetryAfter:    60 * time.Second,
		Timeout:          120 * time.Second,
		MaxResponseBytes: 8 << 20,
		IdleConns:        64,
	}
}

// FromEnv returns c with BaseURL and APIKey taken from OPENAI_BASE_URL and
// OPENAI_API_KEY where c leaves them empty. New never reads the environment
// itself; call FromEnv when the environment should count.
func (c Config) FromEnv() Config {
	return c.fromLookup(os.LookupEnv)
}

func (c Config) fromLookup(lookup func(string) (string, bool)) Config {
	if v, ok := lookup("OPENAI_BASE_URL"); ok && c.BaseURL == "" {
		c.BaseURL = v
	}
	if v, ok := lookup("OPENAI_API_KEY"); ok && c.APIKey == "" {
		c.APIKey = v
	}
	return c
}

// Validate reports the first field outside its bounds.
func (c Config) Validate() error {
	if c.Model == "" {
		return fmt.Errorf("llm: Model is required")
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("llm: BaseURL %q must be an absolute http(s) URL", c.BaseURL)
		}
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > maxAttemptsLimit {
		return fmt.Errorf("llm: MaxAttempts %d must be in 1..%d", c.MaxAttempts, maxAttemptsLimit)
	}
	if c.InitialBackoff <= 0 || c.InitialBackoff > c.MaxBackoff {
		return fmt.Errorf("llm: InitialBackoff %s must be > 0 and <= MaxBackoff %s", c.InitialBackoff, c.MaxBackoff)
	}
	if c.MaxBackoff > maxBackoffLimit {
		return fmt.Errorf("llm: MaxBackoff %s must be <= %s", c.MaxBackoff, maxBackoffLimit)
	}
	if c.MaxRetryAfter < 0 {
		return fmt.Errorf("llm: MaxRetryAfter %s must be >= 0", c.MaxRetryAfter)
	}
	if c.MaxResponseBytes < 1 || c.MaxResponseBytes > maxResponseLimit {
		return fmt.Errorf("llm: MaxResponseBytes %d must be in 1..%d", c.MaxResponseBytes, maxResponseLimit)
	}
	if c.IdleConns < 1 || c.IdleConns > MaxIdleConns {
		return fmt.Errorf("llm: IdleConns %d must be in 1..%d", c.IdleConns, MaxIdleConns)
	}
	if c.Timeout < 0 || c.AttemptTimeout < 0 {
		return fmt.Errorf("llm: Timeout %s and AttemptTimeout %s must be >= 0", c.Timeout, c.AttemptTimeout)
	}
	return nil
}

func (c Config) baseURL() string {
	if c.BaseURL == "" {
		return DefaultBaseURL
	}
	return c.BaseURL
}
