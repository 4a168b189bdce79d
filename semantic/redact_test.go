package semantic

import (
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
	"github.com/cairnhq/cairn/internal/redact"
)

const secretRequest = "connect with password=hunter22 and implement it"

// secretSources is a lane whose first user message holds a password.
func secretSources() Sources {
	src := testSources()
	src.Events[0].Content = strPtr("Please " + secretRequest + ", thanks. Also implement the requested behavior.")
	return src
}

func TestRedactUserRequestBecomesOmission(t *testing.T) {
	s := base(t)
	s.UserRequests = append(s.UserRequests, UserRequest{SourceEventID: evUser1, ExactExcerpt: strPtr(secretRequest), Status: RequestActive})
	if err := Validate(s, secretSources()); err != nil {
		t.Fatalf("candidate invalid before redaction: %v", err)
	}
	before, _ := canonical.Encode(s)

	out, n := Redact(s, redact.String)
	if n != 1 {
		t.Fatalf("changed = %d, want 1", n)
	}
	got := out.UserRequests[1]
	wantHash, _ := canonical.Hash(secretRequest)
	if got.ExactExcerpt != nil || got.SecretOmission == nil ||
		got.SecretOmission.Class != redact.ClassPasswordAssignment || got.SecretOmission.SourceSpanHash != wantHash {
		t.Fatalf("redacted request = %+v / %+v", got, got.SecretOmission)
	}
	if out.UserRequests[0].ExactExcerpt == nil {
		t.Fatal("a request without a secret was redacted")
	}
	if err := Validate(out, secretSources()); err != nil {
		t.Fatalf("redacted semantic invalid: %v", err)
	}
	after, _ := canonical.Encode(s)
	if string(before) != string(after) {
		t.Fatal("Redact modified its input")
	}
}

func TestRedactTextFields(t *testing.T) {
	const dsn = "use postgres://admin:s3cr3t-Pa55@db.internal:5432/app"
	s := base(t)
	s.Objective[0].Text = "deploy; " + dsn
	s.Decisions[0].Rationale = strPtr("the password=hunter22 works")
	s.Progress.Completed[0].Text = "logged in with password=hunter22"
	s.Errors[0].Message = "auth failed for " + dsn
	s.ArtifactRefs[0].Purpose = "log with password=hunter22"
	s.Constraints[0].Text = "no secrets here"

	out, n := Redact(s, redact.String)
	if n != 5 {
		t.Fatalf("changed = %d, want 5", n)
	}
	enc, err := canonical.Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter22", "s3cr3t-Pa55"} {
		if strings.Contains(string(enc), secret) {
			t.Fatalf("secret %q survived: %s", secret, enc)
		}
	}
	if !strings.Contains(out.Objective[0].Text, "[REDACTED:url_password]") || out.Constraints[0].Text != "no secrets here" {
		t.Fatalf("objective/constraint = %q / %q", out.Objective[0].Text, out.Constraints[0].Text)
	}
	if err := Validate(out, testSources()); err != nil {
		t.Fatalf("redacted semantic invalid: %v", err)
	}
}

func TestRedactMergesNewDuplicates(t *testing.T) {
	s := base(t)
	s.CriticalContext = []Sourced{
		{Text: "token: password=hunter22", SourceEventIDs: []string{evUser1}},
		{Text: "token: password=letmein99", SourceEventIDs: []string{evUser1}},
		{Text: "other", SourceEventIDs: []string{evUser1}},
	}
	if err := Validate(s, testSources()); err != nil {
		t.Fatalf("candidate invalid before redaction: %v", err)
	}
	out, n := Redact(s, redact.String)
	if n != 2 || len(out.CriticalContext) != 2 || out.CriticalContext[1].Text != "other" {
		t.Fatalf("changed %d, critical_context = %+v", n, out.CriticalContext)
	}
	if err := Validate(out, testSources()); err != nil {
		t.Fatalf("redacted semantic invalid: %v", err)
	}
	if len(s.CriticalContext) != 3 {
		t.Fatal("Redact modified its input")
	}
}

func TestRedactKeepsBounds(t *testing.T) {
	s := base(t)
	// Each 8-byte password becomes a longer marker, pushing the text past
	// the bound; Redact cuts it back at a character boundary.
	s.Objective[0].Text = strings.Repeat("password=abcdefgh é ", 200)[:3999]
	out, n := Redact(s, func(text string) (string, []string) {
		return strings.ReplaceAll(text, "abcdefgh", "[REDACTED:password_assignment]"), []string{"password_assignment"}
	})
	if n == 0 || len(out.Objective[0].Text) > DefaultBounds.TextBytes {
		t.Fatalf("changed %d, text %d bytes", n, len(out.Objective[0].Text))
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("redacted semantic invalid: %v", err)
	}
	emptied, _ := Redact(s, func(string) (string, []string) { return "", []string{""} })
	if err := emptied.Validate(); err != nil {
		t.Fatalf("scrubber returning empty text: %v", err)
	}
	if emptied.UserRequests[0].SecretOmission == nil || emptied.UserRequests[0].SecretOmission.Class != fallbackClass {
		t.Fatalf("empty class not replaced: %+v", emptied.UserRequests[0])
	}
}

func TestRedactNil(t *testing.T) {
	if out, n := Redact(nil, redact.String); out != nil || n != 0 {
		t.Fatal("Redact(nil) is not nil, 0")
	}
	s := base(t)
	out, n := Redact(s, nil)
	if n != 0 || out == s {
		t.Fatal("Redact with no scrubber must return an unchanged copy")
	}
}

func TestClone(t *testing.T) {
	s := base(t)
	c := s.Clone()
	c.Objective[0].SourceEventIDs[0] = "changed"
	*c.UserRequests[0].ExactExcerpt = "changed"
	c.Progress.Completed[0].VerificationEventIDs[0] = "changed"
	if s.Objective[0].SourceEventIDs[0] != evUser1 || *s.UserRequests[0].ExactExcerpt == "changed" ||
		s.Progress.Completed[0].VerificationEventIDs[0] != evTool {
		t.Fatal("Clone shares memory with the original")
	}
}
