// Command processor is Cairn: it compacts LLM-agent conversation lanes from
// NATS JetStream requests, or offline from a request file.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdio stdio) int
}

// stdio is the command's view of the terminal, so tests can drive commands.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// commands lists every subcommand; each lives in its own file.
var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, io stdio) int {
	name := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		usage(io.out)
		return 0
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args, io)
		}
	}
	fmt.Fprintf(io.err, "processor: unknown command %q\n", name)
	usage(io.err)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: processor <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'processor <command> --help' for a command's flags.")
}
