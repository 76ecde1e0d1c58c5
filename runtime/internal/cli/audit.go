package cli

import (
	"flag"
	"os"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// cliWho is who the command line's actions are taken by in the audit log:
// cli@<host>.
func cliWho() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "cli@" + host
}

var cmdAudit = listCommand("[--limit N] [--cursor C] [--json]: the audit log, newest first: who took which action (API, dashboard, command line) on what, when, and how it ended",
	[]string{"WHEN", "WHO", "VIA", "WHAT", "TARGET", "OUTCOME", "DETAIL"},
	func(fs *flag.FlagSet) lister {
		limit := fs.Int("limit", 50, "at most this many entries (1-500)")
		cursor := fs.String("cursor", "", "where the previous page ended (its next cursor)")
		return func(e *Env, a admin.Admin) (listing, error) {
			page, err := a.AuditLog(e.Ctx, admin.AuditQuery{Cursor: *cursor, Limit: *limit})
			if err != nil {
				return listing{}, err
			}
			l := listing{js: page, next: page.Next, rows: admin.Map(page.Entries, func(x bananastype.AuditEntry) []string {
				detail := x.Detail
				if x.Error != "" {
					detail = x.Error
				}
				return []string{stamp(x.When), x.Who, x.Via, x.What, orDash(x.Target), x.Outcome, orDash(firstLine(detail))}
			})}
			if len(page.Entries) == 0 {
				l.caption = "no action recorded"
			}
			return l, nil
		}
	})
