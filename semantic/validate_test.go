package semantic

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/canonical"
)

// lineage is a previous semantic citing events of an earlier request.
const (
	oldUser     = "evt-old-user"
	oldTool     = "evt-old-tool"
	oldArtifact = "artifact-old"
)

func testLineage() *Semantic {
	return &Semantic{
		Version:   1,
		Objective: []Sourced{{Text: "ship the feature", SourceEventIDs: []string{oldUser}}},
		UserRequests: []UserRequest{{
			SourceEventID: oldUser, ExactExcerpt: strPtr("ship the feature by friday"), Status: RequestActive,
		}},
		Progress: Progress{Completed: []ProgressItem{{
			Text: "built it", SourceEventIDs: []string{oldTool}, VerificationEventIDs: []string{"evt-verified-only"},
		}}},
		ArtifactRefs: []ArtifactRef{{ArtifactID: oldArtifact, Purpose: "build log", SourceEventIDs: []string{oldTool}}},
		Coverage:     Coverage{FirstChatSeq: 1, LastChatSeq: 9},
	}
}

func TestValidateAgainstSources(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(s *Semantic, src *Sources)
		want    string // "" means valid
		details map[string]any
	}{
		{"base is valid", func(s *Semantic, src *Sources) {}, "", nil},
		{"shape checked first", func(s *Semantic, src *Sources) {
			s.Version = 2
			s.Coverage.FirstChatSeq = 2
		}, msgVersion, nil},
		{"coverage first differs", func(s *Semantic, src *Sources) { s.Coverage.FirstChatSeq = 2 }, msgCoverageMismatch, nil},
		{"coverage last differs", func(s *Semantic, src *Sources) { src.Coverage.LastChatSeq = 5 }, msgCoverageMismatch, nil},
		{"coverage before sources", func(s *Semantic, src *Sources) {
			s.Coverage.LastChatSeq = 3
			s.Objective[0].SourceEventIDs = []string{"nope"}
		}, msgCoverageMismatch, nil},
		{"unknown source id", func(s *Semantic, src *Sources) {
			s.Objective[0].SourceEventIDs = []string{evUser1, "nope", "nope2"}
			s.Errors[0].SourceEventIDs = []string{"nope"}
		}, msgUnknownSources, map[string]any{"rule": "reference", "event_ids": []string{"nope", "nope2"}}},
		{"unknown verification id is not a citation", func(s *Semantic, src *Sources) {
			s.Progress.Completed[0].VerificationEventIDs = []string{"not-a-source"}
		}, "", nil},
		{"lineage id accepted for objective", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			s.Objective[0].SourceEventIDs = []string{oldUser}
		}, "", nil},
		{"lineage verification id is not a known source", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			s.Objective[0].SourceEventIDs = []string{"evt-verified-only"}
		}, msgUnknownSources, map[string]any{"rule": "reference", "event_ids": []string{"evt-verified-only"}}},
		{"lineage id not accepted for a new user request", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			s.UserRequests[0] = UserRequest{SourceEventID: oldUser, ExactExcerpt: strPtr("ship the feature"), Status: RequestActive}
		}, msgExcerpt, nil},
		{"user request copied unchanged from lineage", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			s.UserRequests = append(s.UserRequests, src.Lineage.UserRequests[0])
		}, "", nil},
		{"user request from lineage with a new status", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			old := src.Lineage.UserRequests[0]
			old.Status = RequestCompleted
			s.UserRequests = append(s.UserRequests, old)
		}, "", nil},
		{"user request from lineage with a changed excerpt", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			old := src.Lineage.UserRequests[0]
			old.ExactExcerpt = strPtr("ship it by monday")
			s.UserRequests = append(s.UserRequests, old)
		}, msgExcerpt, nil},
		{"lineage request without lineage", func(s *Semantic, src *Sources) {
			s.UserRequests = append(s.UserRequests, testLineage().UserRequests[0])
		}, msgUnknownSources, map[string]any{"rule": "reference", "event_ids": []string{oldUser}}},
		{"excerpt not a substring", func(s *Semantic, src *Sources) {
			s.UserRequests[0].ExactExcerpt = strPtr("implement the missing behavior")
		}, msgExcerpt, nil},
		{"excerpt differs in case", func(s *Semantic, src *Sources) {
			s.UserRequests[0].ExactExcerpt = strPtr("please implement")
		}, msgExcerpt, nil},
		{"excerpt whole content", func(s *Semantic, src *Sources) {
			s.UserRequests[0].ExactExcerpt = strPtr("Please implement the requested behavior, thanks.")
		}, "", nil},
		{"excerpt from an assistant event", func(s *Semantic, src *Sources) {
			s.UserRequests[0] = UserRequest{SourceEventID: evAssistant, ExactExcerpt: strPtr("use a table"), Status: RequestActive}
		}, msgExcerpt, nil},
		{"excerpt from a user event with null content", func(s *Semantic, src *Sources) {
			src.Events[3].Content = nil
			s.UserRequests[0] = UserRequest{SourceEventID: evUser2, ExactExcerpt: strPtr("Keep"), Status: RequestActive}
		}, msgExcerpt, nil},
		{"omission of a user event", func(s *Semantic, src *Sources) {
			s.UserRequests[0].ExactExcerpt = nil
			s.UserRequests[0].SecretOmission = &SecretOmission{Class: "password", SourceSpanHash: strings.Repeat("0", 64)}
		}, "", nil},
		{"omission of a tool event", func(s *Semantic, src *Sources) {
			s.UserRequests[0] = UserRequest{
				SourceEventID:  evTool,
				SecretOmission: &SecretOmission{Class: "password", SourceSpanHash: strings.Repeat("0", 64)},
				Status:         RequestActive,
			}
		}, msgExcerpt, nil},
		{"excerpt and omission both set", func(s *Semantic, src *Sources) {
			s.UserRequests[0].SecretOmission = &SecretOmission{Class: "password", SourceSpanHash: strings.Repeat("0", 64)}
		}, msgExclusive, nil},
		{"artifact carried by the cited event", func(s *Semantic, src *Sources) {}, "", nil},
		{"artifact cited from an event that does not carry it", func(s *Semantic, src *Sources) {
			s.ArtifactRefs[0].SourceEventIDs = []string{evUser1}
		}, msgArtifacts, map[string]any{"rule": "reference", "artifact_ids": []string{artifactA}}},
		{"artifact cited from a carrier and a non-carrier", func(s *Semantic, src *Sources) {
			s.ArtifactRefs[0].SourceEventIDs = []string{evTool, evUser1}
		}, msgArtifacts, map[string]any{"rule": "reference", "artifact_ids": []string{artifactA}}},
		{"unknown artifact", func(s *Semantic, src *Sources) {
			s.ArtifactRefs[0].ArtifactID = "artifact-missing"
		}, msgArtifacts, map[string]any{"rule": "reference", "artifact_ids": []string{"artifact-missing"}}},
		{"artifact proved by lineage", func(s *Semantic, src *Sources) {
			src.Lineage = testLineage()
			s.ArtifactRefs = append(s.ArtifactRefs, src.Lineage.ArtifactRefs[0])
		}, "", nil},
		{"artifacts checked before excerpts", func(s *Semantic, src *Sources) {
			s.ArtifactRefs[0].ArtifactID = "artifact-missing"
			s.UserRequests[0].ExactExcerpt = strPtr("not there")
		}, msgArtifacts, map[string]any{"rule": "reference", "artifact_ids": []string{"artifact-missing"}}},
		{"duplicate objective", func(s *Semantic, src *Sources) {
			s.Objective = append(s.Objective, s.Objective[0])
		}, msgDuplicates, nil},
		{"duplicate user request", func(s *Semantic, src *Sources) {
			s.UserRequests = append(s.UserRequests, s.UserRequests[0])
		}, msgDuplicates, nil},
		{"duplicate active progress", func(s *Semantic, src *Sources) {
			item := ProgressItem{Text: "x", SourceEventIDs: []string{evTool}}
			s.Progress.Active = []ProgressItem{item, item}
		}, msgDuplicates, nil},
		{"same entry in two lists is not a duplicate", func(s *Semantic, src *Sources) {
			s.CriticalContext = []Sourced{s.Objective[0]}
		}, "", nil},
		{"id order makes entries distinct", func(s *Semantic, src *Sources) {
			s.Objective = []Sourced{
				{Text: "a", SourceEventIDs: []string{evUser1, evUser2}},
				{Text: "a", SourceEventIDs: []string{evUser2, evUser1}},
			}
		}, "", nil},
		{"byte cap exceeded", func(s *Semantic, src *Sources) { src.MaxBytes = 100 }, msgTooLarge, nil},
		{"byte cap exactly met", func(s *Semantic, src *Sources) {
			n, _ := canonical.EncodedSize(s)
			src.MaxBytes = n
		}, "", nil},
		{"byte cap one short", func(s *Semantic, src *Sources) {
			n, _ := canonical.EncodedSize(s)
			src.MaxBytes = n - 1
		}, msgTooLarge, nil},
		{"default byte cap", func(s *Semantic, src *Sources) {
			big := strings.Repeat("b", 4000)
			s.CriticalContext = nil
			for i := range 33 {
				s.CriticalContext = append(s.CriticalContext, Sourced{Text: big[:4000-i], SourceEventIDs: []string{evUser1}})
			}
		}, msgTooLarge, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base(t)
			src := testSources()
			tt.mutate(s, &src)
			err := Validate(s, src)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			e := wantInvalid(t, err, tt.want)
			if tt.details != nil && !reflect.DeepEqual(e.Details, tt.details) {
				t.Fatalf("details = %#v, want %#v", e.Details, tt.details)
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	wantInvalid(t, Validate(nil, testSources()), msgNotMap)
}

func TestArtifactMessageNamesHostProvenance(t *testing.T) {
	s := base(t)
	s.ArtifactRefs[0].SourceEventIDs = []string{evUser1}
	err := Validate(s, testSources())
	if err == nil || !strings.Contains(err.Error(), "host source provenance") {
		t.Fatalf("error = %v", err)
	}
}

func TestCitedEventIDs(t *testing.T) {
	got := citedEventIDs(base(t))
	want := []string{evUser1, evUser2, evAssistant, evTool}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("citedEventIDs = %v, want %v", got, want)
	}
	if citedEventIDs(nil) != nil {
		t.Fatal("nil semantic cites ids")
	}
}
