package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(command{name: "version", summary: "print the version of Cairn", run: runVersion})
}

func runVersion(_ context.Context, args []string, io stdio) int {
	fs := newFlagSet("version", "version [--json]", io)
	asJSON := fs.Bool("json", false, "print JSON")
	if ok, code := parseFlags(fs, args, nil); !ok {
		return code
	}
	version, revision := buildVersion()
	if *asJSON {
		printJSON(io.out, map[string]string{"version": version, "revision": revision, "go": runtime.Version()})
		return 0
	}
	fmt.Fprintf(io.out, "cairn %s (%s, %s)\n", version, revision, runtime.Version())
	return 0
}

// buildVersion reads the module version and VCS revision the binary was built
// from, when the build recorded them.
func buildVersion() (version, revision string) {
	version, revision = "(devel)", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if info.Main.Version != "" {
		version = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			revision = s.Value[:12]
		}
	}
	return
}
