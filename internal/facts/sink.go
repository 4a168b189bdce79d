package facts

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cairnhq/cairn/events"
)

// MemoryFile is the name of the per-scope file the sink writes.
const MemoryFile = "MEMORY.md"

// maxMemoryFileBytes bounds the file the sink reads back before appending.
const maxMemoryFileBytes = 16 << 20

// Sink appends facts to <Dir>/<EncodeScope(scope)>/MEMORY.md (see Path) as
// MemoryLine lines grouped by kind, each kind under its own heading
// ("## Constraints"; KindHeading). The file is append-only in effect:
// existing lines are never changed, removed or reordered; a new fact goes
// at the end of its kind's section (a section is added at the end of the
// file when the kind has none yet), and a line already present is not
// added again, so re-running a job adds nothing. Each Append writes the
// whole new file to a temporary file in the same directory and renames it
// over the old one, so a reader sees the file before or after a flush,
// never half of one. One Sink serializes its own appends; two processes
// must not share a Dir.
type Sink struct {
	Dir string
	mu  sync.Mutex
}

// KindHeading is the MEMORY.md heading of a fact kind's section.
func KindHeading(kind Kind) string {
	switch validKind(kind) {
	case KindPreference:
		return "## Preferences and conventions"
	case KindDecision:
		return "## Decisions"
	case KindConstraint:
		return "## Constraints"
	case KindEnvironment:
		return "## Environment"
	case KindIdentity:
		return "## People and ownership"
	}
	return "## Notes"
}

// MemoryLine is the MEMORY.md line of a fact: "- <title>: <body>", or
// "- <body>" when the body already says the title.
func MemoryLine(f Fact) string {
	return "- " + factText(clean(f.Title), clean(f.Body))
}

// maxDirName bounds a scope's directory name, well under the 255 bytes most
// file systems allow.
const maxDirName = 200

// Path returns the MEMORY.md path of scope: <Dir>/<EncodeScope(scope)>/, or,
// when that name is too long for a file system, "sha256.<hex>" of the scope
// (a name EncodeScope never produces, since it holds no dot).
func (s *Sink) Path(scope Scope) string {
	name := EncodeScope(scope)
	if len(name) > maxDirName {
		sum := sha256.Sum256([]byte(scope.Kind + "\x00" + scope.ID))
		name = "sha256." + hex.EncodeToString(sum[:])
	}
	return filepath.Join(s.Dir, name, MemoryFile)
}

// Append adds the lines of facts that the scope's file does not hold yet and
// reports how many it added.
func (s *Sink) Append(scope Scope, facts []Fact) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.Path(scope)
	old, err := readBounded(path)
	if err != nil {
		return 0, err
	}
	lines := splitLines(old)
	have := make(map[string]bool, len(lines))
	for _, l := range lines {
		have[l] = true
	}
	added := 0
	for _, kind := range events.FactKinds {
		var add []string
		for _, f := range facts {
			if validKind(f.Kind) != kind {
				continue
			}
			if line := MemoryLine(f); !have[line] {
				have[line] = true
				add = append(add, line)
			}
		}
		if len(add) > 0 {
			lines = insertInSection(lines, KindHeading(kind), add)
			added += len(add)
		}
	}
	if added == 0 {
		return 0, nil
	}
	if err := writeAtomic(path, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return 0, err
	}
	return added, nil
}

// splitLines returns the lines of a file's content, without the final
// newline's empty line.
func splitLines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxMemoryFileBytes)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// insertInSection inserts add after the last non-blank line of heading's
// section (which ends at the next "## " heading), or appends the heading
// and add at the end when the file has no such section.
func insertInSection(lines []string, heading string, add []string) []string {
	start := slices.Index(lines, heading)
	if start < 0 {
		if len(lines) > 0 && lines[len(lines)-1] != "" {
			lines = append(lines, "")
		}
		return append(append(lines, heading), add...)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") {
			end = i
			break
		}
	}
	for end > start+1 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	out := make([]string, 0, len(lines)+len(add))
	out = append(out, lines[:end]...)
	out = append(out, add...)
	return append(out, lines[end:]...)
}

func readBounded(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("facts: memory file: %w", err)
	}
	if info.Size() > maxMemoryFileBytes {
		return nil, fmt.Errorf("facts: memory file %s is over %d bytes", path, maxMemoryFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("facts: memory file: %w", err)
	}
	return data, nil
}

// writeAtomic writes data to a temporary file beside path, syncs it and
// renames it over path.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("facts: memory dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+MemoryFile+".*")
	if err != nil {
		return fmt.Errorf("facts: memory file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("facts: memory file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("facts: memory file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("facts: memory file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("facts: memory file: %w", err)
	}
	return nil
}
