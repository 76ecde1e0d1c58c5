// Package dashboard is the web dashboard the API serves at GET /: server-rendered
// pages of routes, per-minute charts, jobs, one job (from Redis, or from the
// task history once Redis has let it go; a running one's status and progress
// kept fresh in place while it runs), the task history's search, cron
// entries, schedules (those made at run time and the code's cron entries),
// workers and tasks (each with its args JSON Schema), a workflow with its
// steps (found by id, or from a step's job), with the actions an operator takes
// on them (replay, delete, cancel, pause, resume, purge or replay every
// failed job of a route's dead-letter queue, run a cron entry now, pause,
// resume, run now or delete a schedule, cancel or retry a workflow), and the same replay, delete and cancel in bulk on the
// jobs ticked on a page of the job list (at most MaxBulk at once; a job that
// moved meanwhile is counted as refused).
//
// # Its actions are the API's
//
// Every action form but the bulk one is an endpoint of the API's table
// (api.Actions): an endpoint whose row has an openapi.Button shows as a form
// on the page of its target (a job, a route's row, a route's dead-letter
// listing or limits, a workflow, a cron entry's or a schedule's row) while the target is in
// one of the Button's states, and the form's POST is answered by serving
// that endpoint (the page's target as its path value or query parameter,
// the form's fields as its JSON body), its refusal shown on the error page
// with the API's status and words, its success as the Button's flash. So an
// action added to the endpoint table appears on the dashboard with no code
// here; the login, read-only and CSRF checks of action stand before every
// form alike.
//
// # What it owns, and what it must not know
//
// dashboard owns the HTML: its html/template pages (auto-escaped: a job's args
// or error may hold anything), its embedded stylesheet and script (no CDN, no
// external font: it works offline), the login form that trades the API token
// for a cookie, the CSRF check of every action, and read-only mode. It reads
// and acts through an admin.Admin (the runtime's Inspector, or a fake in
// tests) and shows the admin package's view types as they are: a value a
// page needs that is derived from them is a method of the type or a template
// func here, never a second shape of a job. It maps the admin layer's error
// classes to the status and message an operator sees in one place
// (statusOf). It knows nothing of Redis, of how jobs are stored or of the
// tasks' Go types: it must not import the runtime or results packages, and
// imports queue only for its words (a job's status), and api for its
// endpoint table's actions.
//
// # Sessions and CSRF
//
// The process draws a random secret at start. Every page sets, when it is
// missing, an HttpOnly, SameSite=Strict cookie holding a random nonce; every
// form carries HMAC(secret, nonce), and a POST whose form value does not match
// the HMAC of its cookie's nonce is refused (403). A page of another site can
// neither read the cookie nor compute the HMAC, and SameSite=Strict keeps the
// browser from sending the cookie with its request at all.
//
// With a token set (API_TOKEN, API_TOKENS), the login form compares the
// token given with every token in constant time and sets a second cookie,
// a nonce, its expiry (12 h) and the token's name, signed with the secret
// (HttpOnly, SameSite=Strict). The session's role is the name's, read afresh
// on each request: a page shows only the forms of the actions that role may
// take, and an action beyond it is refused (403) naming the role needed.
// Every action is recorded in the audit log as taken by the token's name
// through the dashboard (admin.Audited), which the Audit page shows. A logout records the
// nonce until that expiry, so a copy of the cookie opens nothing after it; a
// restart draws a new secret and so logs everyone out, which is the price of
// keeping no session store. Both cookies are Secure when the request came
// over TLS. The login form takes a few tries per client address, then one
// every few seconds (429 with Retry-After).
//
// The server around the dashboard refuses, before routing, what a browser
// says a page of another origin sent (Sec-Fetch-Site, Origin): the CSRF
// token is a second lock, not the only one.
package dashboard
