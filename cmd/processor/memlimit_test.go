package main

import (
	"errors"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40, "64KiB": 64 << 10, "1000B": 1000, "123": 123} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "0", "1.5GiB", "1GB", "lots", "9999999TiB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}

func TestMemoryLimitSources(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	env := func(string) (string, bool) { return "1GiB", true }
	noFiles := func(string) ([]byte, error) { return nil, errors.New("absent") }
	files := func(content map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if c, ok := content[name]; ok {
				return []byte(c), nil
			}
			return nil, errors.New("absent")
		}
	}
	v2, v1 := cgroupLimitFiles[0], cgroupLimitFiles[1]
	cases := []struct {
		name, flag string
		env        func(string) (string, bool)
		read       func(string) ([]byte, error)
		limit      int64
		source     string
	}{
		{"flag wins", "256MiB", env, files(map[string]string{v2: "1073741824\n"}), 256 << 20, "--memory-limit"},
		{"flag none", "none", env, noFiles, 0, "--memory-limit"},
		{"GOMEMLIMIT next", "", env, files(map[string]string{v2: "1073741824\n"}), 1 << 30, "GOMEMLIMIT"},
		{"cgroup v2", "", noEnv, files(map[string]string{v2: "1000000000\n"}), 900000000, v2},
		{"cgroup v2 without limit, v1 with one", "", noEnv, files(map[string]string{v2: "max\n", v1: "2000000000\n"}), 1800000000, v1},
		{"cgroup v1 without limit", "", noEnv, files(map[string]string{v1: "9223372036854771712\n"}), 0, ""},
		{"nothing", "", noEnv, noFiles, 0, ""},
	}
	for _, c := range cases {
		limit, source, err := memoryLimit(c.flag, c.env, c.read)
		if err != nil || limit != c.limit || source != c.source {
			t.Errorf("%s: got %d from %q (%v), want %d from %q", c.name, limit, source, err, c.limit, c.source)
		}
	}
	if _, _, err := memoryLimit("lots", noEnv, noFiles); err == nil {
		t.Error("a bad --memory-limit was accepted")
	}
}
