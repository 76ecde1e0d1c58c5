package access

import (
	"strings"
	"testing"
)

func TestParse_ReadsEveryEntry(t *testing.T) {
	got, err := Parse(" ci:read:tok-ci-0001 , ops:operate:tok-ops-001,root:admin:tok-root-01")
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{{"ci", Read, "tok-ci-0001"}, {"ops", Operate, "tok-ops-001"}, {"root", Admin, "tok-root-01"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A bad entry is named by its place and name, and its secret is never
// repeated in the error (it ends in a log line).
func TestParse_ABadEntryIsNamedWithoutItsToken(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ci:read:secret-1,ops:root:secret-2", `entry 2 (ops): role "root" is not read, operate or admin`},
		{"ci:read", "entry 1 (ci): want name:role:token"},
		{"ci:read:secret-1,nocolons", "entry 2: want name:role:token"},
		{"c i:read:secret-1", "entry 1: the name must be"},
		{"ci:read:", "entry 1 (ci): the token is empty"},
		{"ci:read:secret-1,ci:admin:secret-2", "entry 2 (ci): the name ci is given twice"},
		{"ci:read:secret-1,ops:admin:secret-1", "entry 2 (ops): its token is ci's too"},
		{" , ", "no entry"},
	} {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want %q", c.in, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q): the error shows a token: %v", c.in, err)
		}
	}
}

func TestRole_EachAllowsWhatTheOnesBeforeItAllow(t *testing.T) {
	for _, c := range []struct {
		r, need Role
		ok      bool
	}{
		{Read, Read, true}, {Read, Operate, false}, {Read, Admin, false},
		{Operate, Read, true}, {Operate, Operate, true}, {Operate, Admin, false},
		{Admin, Read, true}, {Admin, Operate, true}, {Admin, Admin, true},
		{"", Read, false}, {"root", Read, false}, {Read, "", true},
	} {
		if got := c.r.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v, want %v", c.r, c.need, got, c.ok)
		}
	}
}

func TestSet_MatchesEveryTokenAndTheLegacyOneAsAdmin(t *testing.T) {
	s := NewSet("legacy-token", []Token{{"ci", Read, "tok-ci"}, {"ops", Operate, "tok-ops"}})
	for given, want := range map[string]Token{
		"tok-ci": {Name: "ci", Role: Read}, "tok-ops": {Name: "ops", Role: Operate}, " legacy-token ": {Name: Legacy, Role: Admin},
	} {
		got, ok := s.Match(given)
		if !ok || got != want {
			t.Errorf("Match(%q) = %+v, %v; want %+v", given, got, ok, want)
		}
	}
	for _, wrong := range []string{"", "tok-c", "tok-ci2", "TOK-CI"} {
		if got, ok := s.Match(wrong); ok {
			t.Errorf("Match(%q) = %+v", wrong, got)
		}
	}
	if !NewSet("", nil).Empty() || s.Empty() {
		t.Fatal("Empty is wrong")
	}
	// API_TOKEN that is also an entry of API_TOKENS is that entry.
	if got, _ := NewSet("tok-ci", []Token{{"ci", Read, "tok-ci"}}).Match("tok-ci"); got.Role != Read {
		t.Fatalf("the legacy token given as an entry too: %+v", got)
	}
}
