package main

import (
	"flag"
	"io"
	"log/slog"
	"strings"
)

// logFlags choose the format and level of the service's logs.
type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "auto", "log format: json, text, or auto (text on a terminal, JSON otherwise)")
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error (conversation content is only logged at debug)")
}

// logger builds the slog logger the flags describe.
func (l *logFlags) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(l.level))); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.format == "text" || (l.format == "auto" && isTerminal(w)) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
