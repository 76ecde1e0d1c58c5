package engine

import (
	"context"
	"log/slog"

	"github.com/bananas-go/bananas/queue"
)

// jobLog logs one job's events with its attributes. It builds nothing until
// a line is actually written: a logger.With per job cost more than the job's
// own bookkeeping when the lines were disabled anyway.
type jobLog struct {
	l *slog.Logger
	d *queue.Dispatch
}

func (j jobLog) log(level slog.Level, msg string, args ...any) {
	if !j.l.Enabled(context.Background(), level) {
		return
	}
	attrs := append([]any{"job", j.d.ID, "task", j.d.Name, "route", j.d.Route, "attempt", j.d.Attempts + 1}, args...)
	j.l.Log(context.Background(), level, msg, attrs...)
}

func (j jobLog) Debug(msg string, args ...any) { j.log(slog.LevelDebug, msg, args...) }
func (j jobLog) Info(msg string, args ...any)  { j.log(slog.LevelInfo, msg, args...) }
func (j jobLog) Warn(msg string, args ...any)  { j.log(slog.LevelWarn, msg, args...) }

// firstLine is s up to its first newline: an error's message without the
// stack recorded after it.
func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
