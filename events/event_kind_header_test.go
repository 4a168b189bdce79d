package events

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Cairn-Event-Kind values subjects.md lists are the ones Cairn sends:
// a compaction event and a harvest job carry the last token of their
// subject (consumer.newRecord), which for events is their kind; a memory
// event carries its kind (facts.Worker.publish).
func TestEventKindHeaderValuesMatchSubjects(t *testing.T) {
	tail := func(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }
	for subject, kind := range map[string]string{SubjectActivated: KindActivated, SubjectSkipped: KindSkipped, SubjectFailed: KindFailed} {
		if tail(subject) != kind {
			t.Errorf("%s ends in %q, not its kind %q: its header would not be its kind", subject, tail(subject), kind)
		}
	}
	sent := []string{tail(SubjectActivated), tail(SubjectSkipped), tail(SubjectFailed), KindMemoryFlush, KindMemoryFailed, tail(SubjectHarvest)}
	doc, err := os.ReadFile("../subjects.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `Cairn-Event-Kind` \\|.*$").Find(doc)
	if row == nil {
		t.Fatal("subjects.md has no Cairn-Event-Kind row")
	}
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllSubmatch(row, -1) {
		documented = append(documented, string(m[1]))
	}
	slices.Sort(sent)
	slices.Sort(documented)
	if !slices.Equal(sent, documented) {
		t.Errorf("subjects.md lists Cairn-Event-Kind values %v, Cairn sends %v", documented, sent)
	}
}
