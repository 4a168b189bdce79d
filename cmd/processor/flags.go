package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// newFlagSet returns a flag set whose usage names the command and its summary.
func newFlagSet(name, synopsis string, io stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.Usage = func() {
		fmt.Fprintf(io.err, "usage: processor %s\n\nflags (each also from the environment as CAIRN_<FLAG>, e.g. --data-dir as CAIRN_DATA_DIR):\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args after taking defaults from the environment: a flag
// --foo-bar defaults to $CAIRN_FOO_BAR when that is set. Extra env names map
// standard variables (NATS_URL, OPENAI_API_KEY) onto flags. It returns false
// after printing the problem; help requests return false with help printed.
func parseFlags(fs *flag.FlagSet, args []string, extraEnv map[string]string) (ok bool, code int) {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		for _, name := range envNames(f.Name, extraEnv) {
			if v, set := os.LookupEnv(name); set {
				if err := f.Value.Set(v); err != nil && envErr == nil {
					envErr = fmt.Errorf("environment %s=%q: %w", name, v, err)
				}
				f.DefValue = f.Value.String()
				return
			}
		}
	})
	if envErr != nil {
		fmt.Fprintln(fs.Output(), "processor:", envErr)
		return false, 2
	}
	// Flags may follow positional arguments (`request FILE --json`): parse
	// again after each positional one and put them back at the end.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return false, 0
			}
			return false, 2
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" || len(rest) == len(args) && rest[0] == args[0] && !hasFlag(rest[1:]) {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	_ = fs.Parse(append([]string{"--"}, positional...))
	return true, 0
}

// hasFlag reports whether any argument looks like a flag.
func hasFlag(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" })
}

// envNames lists the environment variables that may set flag name, most
// specific first.
func envNames(name string, extra map[string]string) []string {
	names := []string{"CAIRN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
	for env, flagName := range extra {
		if flagName == name {
			names = append(names, env)
		}
	}
	return names
}
