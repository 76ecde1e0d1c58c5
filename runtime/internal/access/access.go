// Package access is who may call the HTTP API and the dashboard, and what
// each may do: the API tokens (API_TOKENS, API_TOKEN), each with a name and
// a role, and the order of the roles.
//
// # What it owns, and what it must not know
//
// It owns the roles (read, operate, admin) and what each allows, the syntax
// of API_TOKENS and its errors (naming the entry at fault, never its
// secret), and the lookup of a presented token in constant time against
// every configured one. Which role an endpoint needs is the API's endpoint
// table's (package api); this package knows no endpoint, no HTTP and no
// Redis.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// Role is what a token may do. Each role allows what the roles before it
// allow.
type Role string

// The roles, from least to most.
const (
	// Read: every GET of the API and every page of the dashboard, no action.
	Read Role = "read"
	// Operate: also the day-to-day actions — submit, cancel, pause and
	// resume, replay, run now, signal, schedules.
	Operate Role = "operate"
	// Admin: everything, limits, shards, keys, purges and deletes included.
	Admin Role = "admin"
)

// Roles are the roles, from least to most.
var Roles = []Role{Read, Operate, Admin}

func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a caller of role r may call what needs role need.
// Nothing needs "" (a public endpoint); an unknown role allows nothing more.
func (r Role) Allows(need Role) bool { return need == "" || (r.Valid() && r.rank() >= need.rank()) }

// Token is one API token: its name (who it is in the audit log), its role
// and its secret.
type Token struct {
	Name  string
	Role  Role
	Token string
}

// Legacy is the name of the one token API_TOKEN sets, with the admin role.
const Legacy = "admin"

// Parse reads API_TOKENS: comma-separated name:role:token entries. A name is
// 1-64 of A-Z a-z 0-9 _ . - and appears once; a role is read, operate or
// admin; a token is not empty, holds no space or comma, and
// appears once. An error names the entry at fault by its position and name,
// never by its token.
func Parse(s string) ([]Token, error) {
	var out []Token
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, rest, ok1 := strings.Cut(entry, ":")
		role, secret, ok2 := strings.Cut(rest, ":")
		where := fmt.Sprintf("entry %d", i+1)
		if ok1 && validName(name) {
			where = fmt.Sprintf("entry %d (%s)", i+1, name)
		}
		switch {
		case !ok1 || !ok2:
			return nil, fmt.Errorf("%s: want name:role:token", where)
		case !validName(name):
			return nil, fmt.Errorf("%s: the name must be 1-64 of A-Z a-z 0-9 _ . -", where)
		case !Role(role).Valid():
			return nil, fmt.Errorf("%s: role %q is not read, operate or admin", where, role)
		case secret == "":
			return nil, fmt.Errorf("%s: the token is empty", where)
		case strings.ContainsAny(secret, " \t\r\n"):
			return nil, fmt.Errorf("%s: the token holds a space", where)
		}
		for _, t := range out {
			if t.Name == name {
				return nil, fmt.Errorf("%s: the name %s is given twice", where, name)
			}
			if t.Token == secret {
				return nil, fmt.Errorf("%s: its token is %s's too: each token names one caller", where, t.Name)
			}
		}
		out = append(out, Token{Name: name, Role: Role(role), Token: secret})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no entry: want name:role:token, comma-separated")
	}
	return out, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Set is the tokens a server takes.
type Set struct {
	tokens []Token
	sums   [][sha256.Size]byte
}

// NewSet is the set of tokens, with legacy (API_TOKEN), when not "", as one
// more token named Legacy with the admin role. A legacy token that is also
// one of tokens is taken once, with that entry's name and role.
func NewSet(legacy string, tokens []Token) *Set {
	s := &Set{}
	for _, t := range tokens {
		s.add(t)
	}
	if legacy != "" {
		if _, ok := s.Match(legacy); !ok {
			s.add(Token{Name: Legacy, Role: Admin, Token: legacy})
		}
	}
	return s
}

func (s *Set) add(t Token) {
	s.tokens = append(s.tokens, t)
	s.sums = append(s.sums, sha256.Sum256([]byte(t.Token)))
}

// Empty reports whether s takes no token: the server then asks for none.
func (s *Set) Empty() bool { return s == nil || len(s.tokens) == 0 }

// Match is the token presented as given, compared with every token of s in
// constant time (of digests, so neither a prefix nor the length leaks): the
// time taken does not depend on which token matched, or whether one did.
func (s *Set) Match(given string) (Token, bool) {
	if s.Empty() {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	found := -1
	for i := range s.sums {
		if subtle.ConstantTimeCompare(sum[:], s.sums[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	t := s.tokens[found]
	t.Token = ""
	return t, true
}

// Named is the token of name, its secret left out.
func (s *Set) Named(name string) (Token, bool) {
	if s == nil {
		return Token{}, false
	}
	for _, t := range s.tokens {
		if t.Name == name {
			t.Token = ""
			return t, true
		}
	}
	return Token{}, false
}
