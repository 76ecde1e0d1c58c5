package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// Database creates a database of its own for one test on s and returns its
// URL, as URL but for that database: tests that share a server isolate
// themselves by database. The database stays until the server stops.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	name = "t_" + name + "_" + hex.EncodeToString(b[:])
	// name holds only [a-z0-9_], so quoting it needs no escapes.
	if _, err := s.query(context.Background(), "postgres", `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return strings.Replace(s.URL(), "/postgres?", "/"+name+"?", 1)
}
