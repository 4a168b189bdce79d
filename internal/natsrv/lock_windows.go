//go:build windows

package natsrv

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte lies: past the recorded process id,
// since Windows locks are mandatory and would hide it from readPID.
const lockOffset = 1 << 30

// acquire takes an exclusive LockFileEx lock on path. Windows releases it
// when the handle closes, also when the process is killed.
func acquire(path string) (*os.File, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	h := windows.Handle(f.Fd())
	region := func() *windows.Overlapped { return &windows.Overlapped{Offset: lockOffset} }
	err = windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, region())
	if err != nil {
		_ = f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, nil, errLocked
		}
		return nil, nil, err
	}
	return f, func() error { return windows.UnlockFileEx(h, 0, 1, 0, region()) }, nil
}
