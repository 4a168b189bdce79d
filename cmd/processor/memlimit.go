package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Where a container's memory limit is found: cgroup v2, then v1.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// cgroupShare is the part of a container's memory limit given to the Go
// heap's soft limit; the rest is for stacks, the runtime and the kernel's
// view of the process beyond the heap.
const cgroupShare = 0.9

// memoryLimit decides the Go runtime's soft memory limit for serve: the
// --memory-limit flag when given ("none" for no limit); else GOMEMLIMIT,
// which the runtime has already applied; else cgroupShare of the container's
// memory limit; else none. Without a limit the runtime keeps memory it
// freed for a while, so the resident size creeps up under a steady load
// even though the live heap stays flat; with one it returns it and the
// embedded server's buffers stay within it.
func memoryLimit(flag string, lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) (limit int64, source string, err error) {
	switch flag {
	case "none":
		return 0, "--memory-limit", nil
	case "":
	default:
		n, err := parseBytes(flag)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit: %w", err)
		}
		return n, "--memory-limit", nil
	}
	if v, ok := lookupEnv("GOMEMLIMIT"); ok && v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return 0, "", fmt.Errorf("GOMEMLIMIT: %w", err)
		}
		return n, "GOMEMLIMIT", nil
	}
	for _, file := range cgroupLimitFiles {
		b, err := readFile(file)
		if err != nil {
			continue
		}
		text := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "no limit"
			continue
		}
		return int64(float64(n) * cgroupShare), file, nil
	}
	return 0, "", nil
}

// applyMemoryLimit sets the limit memoryLimit decides and returns it (0:
// none) with where it came from.
func applyMemoryLimit(flag string) (int64, string, error) {
	limit, source, err := memoryLimit(flag, os.LookupEnv, os.ReadFile)
	if err != nil {
		return 0, "", err
	}
	switch {
	case source == "GOMEMLIMIT":
		// The runtime read it at start.
	case limit > 0:
		debug.SetMemoryLimit(limit)
	case source == "--memory-limit":
		debug.SetMemoryLimit(math.MaxInt64)
	}
	return limit, source, nil
}

// byteUnits are the suffixes GOMEMLIMIT accepts.
var byteUnits = []struct {
	suffix string
	size   int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// parseBytes reads a size as GOMEMLIMIT writes it: a whole number of bytes
// with an optional B, KiB, MiB, GiB or TiB suffix.
func parseBytes(s string) (int64, error) {
	num, unit := s, int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = rest, u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/unit {
		return 0, errors.New("want a size such as 512MiB or 2GiB, got " + strconv.Quote(s))
	}
	return n * unit, nil
}
