package dashboard

import (
	"net/http"
	"net/url"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/runtime/admin"
)

// auditData is the Audit page: a page of the audit log, newest first.
type auditData struct {
	Page bananastype.AuditPage
	Next string // link to the next page; "" at the end
}

// audit shows the audit log: who took which action on what, when, and how
// it ended.
func (d *Dashboard) audit(r *http.Request, p *page) (int, error) {
	page, err := d.a.AuditLog(r.Context(), admin.AuditQuery{Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		return 0, err
	}
	data := auditData{Page: page}
	if page.Next != "" {
		data.Next = "/audit?" + url.Values{"cursor": {page.Next}}.Encode()
	}
	p.Title, p.Nav, p.Data = "Audit log", "audit", data
	return http.StatusOK, nil
}
