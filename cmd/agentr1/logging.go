package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// Log formats of --log-format.
const (
	logText = "text"
	logJSON = "json"
)

// declareLogFlag declares --log-format into format.
func declareLogFlag(fs *flag.FlagSet, format *string) {
	fs.StringVar(format, "log-format", logText, "log lines (setup, warnings, errors) on stderr as text or json (log/slog); progress and per-step lines stay on stdout")
}

// newLogger returns the logger of a long-running command: log/slog with a text or JSON handler
// on w (normally stderr). Log lines are what a person or a log collector reads afterwards;
// progress bars, per-step summaries and results are human lines on stdout instead.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	switch format {
	case logText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case logJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", errUsage, format)
}
