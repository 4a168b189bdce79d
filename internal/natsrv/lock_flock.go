//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package natsrv

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// acquire takes an exclusive flock(2) on path. The kernel releases it when
// the descriptor closes, also when the process is killed, so a crash leaves
// no stale lock behind.
func acquire(path string) (*os.File, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	fd := int(f.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, errLocked
		}
		return nil, nil, err
	}
	return f, func() error { return unix.Flock(fd, unix.LOCK_UN) }, nil
}
