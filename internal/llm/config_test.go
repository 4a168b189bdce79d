package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := DefaultConfig()
	valid.Model = "m"
	if err := valid.Validate(); err != nil {
		t.Fatalf("default config with model: %v", err)
	}
	cases := map[string]func(*Config){
		"Model":            func(c *Config) { c.Model = "" },
		"BaseURL":          func(c *Config) { c.BaseURL = "localhost:8080" },
		"MaxAttempts":      func(c *Config) { c.MaxAttempts = 0 },
		"InitialBackoff":   func(c *Config) { c.InitialBackoff = c.MaxBackoff + 1 },
		"MaxBackoff":       func(c *Config) { c.MaxBackoff = time.Hour },
		"MaxRetryAfter":    func(c *Config) { c.MaxRetryAfter = -1 },
		"Timeout":          func(c *Config) { c.Timeout = -1 },
		"MaxResponseBytes": func(c *Config) { c.MaxResponseBytes = 0 },
		"IdleConns":        func(c *Config) { c.IdleConns = 0 },
	}
	for field, breakIt := range cases {
		c := valid
		breakIt(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: Validate = %v, want an error naming the field", field, err)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted an invalid config", field)
		}
	}
}

func TestConfigFromEnvFillsOnlyEmptyFields(t *testing.T) {
	env := map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1/", "OPENAI_API_KEY": "k"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	got := Config{}.fromLookup(lookup)
	if got.BaseURL != env["OPENAI_BASE_URL"] || got.APIKey != "k" {
		t.Fatalf("from empty: %+v", got)
	}
	got = Config{BaseURL: "https://example.invalid/v1/", APIKey: "mine"}.fromLookup(lookup)
	if got.BaseURL != "https://example.invalid/v1/" || got.APIKey != "mine" {
		t.Fatalf("explicit values overwritten: %+v", got)
	}
	t.Setenv("OPENAI_API_KEY", "from-env")
	if DefaultConfig().FromEnv().APIKey != "from-env" {
		t.Fatal("FromEnv ignored OPENAI_API_KEY")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"absent", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"ms wins", map[string]string{"Retry-After": "3", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"nan", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, maxRetryAfterHeader, true},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := parseRetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %s %v, want %s %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStatusRetryable(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 422: false,
		408: true, 409: true, 429: true, 500: true, 502: true, 503: true} {
		if statusRetryable(status) != want {
			t.Errorf("statusRetryable(%d) = %v", status, !want)
		}
	}
}

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", maxErrorText)
	got := truncate(s)
	if len(got) > maxErrorText+len("…") || !strings.HasSuffix(got, "…") {
		t.Fatalf("truncate length %d", len(got))
	}
	if !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
		t.Fatal("truncate changed the prefix")
	}
}
