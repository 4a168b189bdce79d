//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || windows)

package natsrv

import (
	"errors"
	"io/fs"
	"os"
)

// acquire creates path exclusively, on platforms without an advisory file
// lock. Unlike a lock, the file outlives a killed process: after a crash
// it must be removed by hand.
func acquire(path string) (*os.File, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil, errLocked
	}
	if err != nil {
		return nil, nil, err
	}
	return f, func() error { return os.Remove(path) }, nil
}
