// Package scheduler runs what happens at a time rather than on a push: the
// promoter that moves delayed and retried jobs to their ready lists when they
// fall due (Promoter), and, built on it, cron entries that fire exactly once per
// tick.
//
// It knows the queue package and nothing above it: the runtime wires its
// wake-ups (the schedule channel) in.
package scheduler
