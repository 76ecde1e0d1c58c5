package parse

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

const prefix = "//bananas:"

// directive is one //bananas: line as written, with the position of each part.
type directive struct {
	kind    string // "task" or "cron"
	kindPos token.Pos
	text    string // the whole line
	spec    string // cron: the quoted schedule
	specPos token.Pos
	keys    []keyValue
}

type keyValue struct {
	key, value string
	pos        token.Pos // of the key
	valuePos   token.Pos
}

// findDirectives returns the //bananas: comment lines of a file, and those
// that were meant to be one (nearMiss). They are read from the raw comment
// list: CommentGroup.Text() drops directive lines.
func findDirectives(f *ast.File) []*ast.Comment {
	var out []*ast.Comment
	for _, g := range f.Comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, prefix) || nearMiss(c.Text) != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// nearMiss reports why a comment that is almost a directive is not one —
// "// bananas:task", "//bananas: task", "//banana:task", "//Bananas:cron" —
// or "" for any other comment. Go reads only the exact form, so a near miss
// would otherwise be ignored and the user meet an undefined stub later.
// Prose is told apart by the word after the colon, which must be close to
// task or cron.
func nearMiss(text string) string {
	body, ok := strings.CutPrefix(text, "//")
	if !ok {
		return ""
	}
	if rest, exact := strings.CutPrefix(text, prefix); exact {
		if word := strings.TrimLeft(rest, " \t"); word != rest && directiveWord(word) {
			return fmt.Sprintf("malformed directive %q: no space after the colon; write //bananas:%s", text, firstWord(word))
		}
		return ""
	}
	name, after, ok := strings.Cut(strings.TrimLeft(body, " \t"), ":")
	name = strings.ToLower(strings.TrimSpace(name))
	if !ok || (name != "bananas" && name != "banana") {
		return ""
	}
	word := strings.TrimLeft(after, " \t")
	if !directiveWord(word) {
		return ""
	}
	return fmt.Sprintf("malformed directive %q: write //bananas:task or //bananas:cron exactly (\"bananas\" in lower case, no space after // or the colon)", text)
}

// directiveWord reports whether s starts with a word within two edits of
// task or cron.
func directiveWord(s string) bool {
	w := strings.ToLower(firstWord(s))
	return editDistance(w, "task") <= 2 || editDistance(w, "cron") <= 2
}

// editDistance is the Levenshtein distance of a and b (short words).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parseDirective splits one directive line into its kind, cron spec and
// key=value pairs, reporting malformed parts.
func parseDirective(c *ast.Comment, errs *collector) (*directive, bool) {
	body := c.Text[len(prefix):]
	kind, rest, _ := strings.Cut(body, " ")
	d := &directive{kind: kind, kindPos: c.Pos() + 2, text: c.Text}
	if kind != "task" && kind != "cron" {
		errs.add(d.kindPos, "unknown directive //bananas:%s: use //bananas:task or //bananas:cron", kind)
		return nil, false
	}
	toks, ok := tokenize(rest, c.Pos()+token.Pos(len(prefix)+len(kind)+1), errs)
	if !ok {
		return nil, false
	}
	if kind == "cron" {
		if len(toks) == 0 || !toks[0].quoted {
			errs.add(d.kindPos, `//bananas:cron needs a quoted schedule first, e.g. //bananas:cron "*/5 * * * *"`)
			return nil, false
		}
		d.spec, d.specPos = toks[0].text, toks[0].pos
		toks = toks[1:]
	}
	ok = true
	for _, t := range toks {
		if t.quoted {
			errs.add(t.pos, "unexpected quoted value %q: write key=value", t.text)
			ok = false
			continue
		}
		k, v, has := strings.Cut(t.text, "=")
		if !has || k == "" {
			errs.add(t.pos, "malformed %q: write key=value", t.text)
			ok = false
			continue
		}
		vpos := t.pos + token.Pos(len(k)+1)
		if uq, err := unquoteValue(v); err != nil {
			errs.add(vpos, "bad quoted value for %s: %v", k, err)
			ok = false
			continue
		} else {
			v = uq
		}
		d.keys = append(d.keys, keyValue{key: k, value: v, pos: t.pos, valuePos: vpos})
	}
	return d, ok
}

func unquoteValue(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	return v, nil
}

type word struct {
	text   string
	pos    token.Pos
	quoted bool
}

// tokenize splits s on spaces, keeping double-quoted parts (which may hold
// spaces) whole: a token is either "quoted" or key=value where value may be quoted.
func tokenize(s string, base token.Pos, errs *collector) ([]word, bool) {
	var out []word
	i := 0
	for i < len(s) {
		if s[i] == ' ' || s[i] == '\t' {
			i++
			continue
		}
		start := i
		inQuote := false
		for i < len(s) && (inQuote || (s[i] != ' ' && s[i] != '\t')) {
			switch {
			case s[i] == '\\' && inQuote:
				i++
			case s[i] == '"':
				inQuote = !inQuote
			}
			i++
		}
		if inQuote {
			errs.add(base+token.Pos(start), "unterminated quote in %q", s[start:])
			return nil, false
		}
		text := s[start:min(i, len(s))]
		tok := word{text: text, pos: base + token.Pos(start)}
		if strings.HasPrefix(text, `"`) {
			uq, err := strconv.Unquote(text)
			if err != nil {
				errs.add(tok.pos, "bad quoted text %s: %v", text, err)
				return nil, false
			}
			tok.text, tok.quoted = uq, true
		}
		out = append(out, tok)
	}
	return out, true
}
