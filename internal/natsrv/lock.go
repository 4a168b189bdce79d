package natsrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// lockName is the file in the data dir whose lock marks the dir as in use.
// It stays after a stop: deleting a locked file would let a second process
// lock a new file of the same name while the first still holds the old one.
const lockName = "cairn.lock"

// errLocked is what a platform's acquire returns when another process holds
// the lock.
var errLocked = errors.New("locked")

// DirInUseError reports that another process holds the data dir: two
// JetStream servers on one store would corrupt it.
type DirInUseError struct {
	Dir string // as the caller named it
	PID int    // the holder's process id, 0 when it is unknown
}

func (e *DirInUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("data dir %s is in use by another Cairn process (pid %d)", e.Dir, e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by another Cairn process", e.Dir)
}

// dirLock is a held lock of a data dir; the operating system releases it when
// the process ends, however it ends (except with the fallback of lock_other.go).
type dirLock struct {
	f      *os.File
	unlock func() error
	once   sync.Once
}

// lockDir takes dir's lock without waiting, and records this process's id
// in it for the message another process shows. shown is dir as the user
// named it.
func lockDir(dir, shown string) (*dirLock, error) {
	path := filepath.Join(dir, lockName)
	f, unlock, err := acquire(path)
	if errors.Is(err, errLocked) {
		return nil, &DirInUseError{Dir: shown, PID: readPID(path)}
	}
	if err != nil {
		return nil, fmt.Errorf("natsrv: lock %s: %w", path, err)
	}
	l := &dirLock{f: f, unlock: unlock}
	if err := writePID(f); err != nil {
		l.release()
		return nil, fmt.Errorf("natsrv: lock %s: %w", path, err)
	}
	return l, nil
}

// release clears the recorded id and gives the lock up; later calls do nothing.
func (l *dirLock) release() {
	l.once.Do(func() {
		_ = l.f.Truncate(0)
		_ = l.unlock()
		_ = l.f.Close()
	})
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// readPID returns the id recorded in the lock file, or 0 (the holder may
// not have written it yet).
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
