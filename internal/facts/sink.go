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
	"strings"
	"sync"
)

// MemoryFile is the name of the per-scope file the sink writes.
const MemoryFile = "MEMORY.md"

// maxMemoryFileBytes bounds the file the sink reads back before appending.
const maxMemoryFileBytes = 16 << 20

// Sink appends facts to <Dir>/<EncodeScope(scope)>/MEMORY.md (see Path) as
// MemoryLine lines. The file is append-only in effect: existing
// lines are never changed, and a line already present is not added again,
// so re-running a job adds nothing. Each Append writes the whole new file to
// a temporary file in the same directory and renames it over the old one, so
// a reader sees the file before or after a flush, never half of one. One
// Sink serializes its own appends; two processes must not share a Dir.
type Sink struct {
	Dir string
	mu  sync.Mutex
}

// MemoryLine is the MEMORY.md line of a fact: "- <title>: <body>", or
// "- <body>" when the body starts with the title, so a heuristic fact
// (title = its line, or the line cut short) says its text once.
func MemoryLine(f Fact) string {
	return "- " + factText(clean(f.Title), clean(f.Body))
}

// longMemoryLine is the line earlier versions wrote for every fact, the
// title repeated before the body. Append treats it as the fact's line too,
// so a file written then does not gain a second line for the same fact.
func longMemoryLine(f Fact) string {
	return "- " + clean(f.Title) + ": " + clean(f.Body)
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
	have := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 0, 64<<10), maxMemoryFileBytes)
	for sc.Scan() {
		have[sc.Text()] = true
	}
	var add bytes.Buffer
	for _, f := range facts {
		line := MemoryLine(f)
		if have[line] || have[longMemoryLine(f)] {
			continue
		}
		have[line] = true
		add.WriteString(line + "\n")
	}
	if add.Len() == 0 {
		return 0, nil
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	if err := writeAtomic(path, append(old, add.Bytes()...)); err != nil {
		return 0, err
	}
	return strings.Count(add.String(), "\n"), nil
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
