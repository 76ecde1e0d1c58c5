package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/bananas-go/bananas/runtime/admin"
)

// unset is the default of a limits flag not given: the limit stays.
const unset = "\x00"

// cmdLimits is `limits ROUTE [--max-running N|none] [--rate N/s|none]
// [--burst M|none] [--json]`: a route's own limits, changed when a flag is
// given, and what its flow control holds now.
func cmdLimits(e *Env, args []string) error {
	fs := e.Flags("ROUTE [--max-running N|none] [--rate N/s|N/m|N/h|none] [--burst M|none] [--json]: show a route's limits and its keys; a flag changes that limit (none removes it)")
	maxRunning := fs.String("max-running", unset, "jobs of the route running at once, across every worker (none: no cap)")
	rate := fs.String("rate", unset, "job starts of the route per second, minute or hour: N/s, N/m, N/h (none: no rate)")
	burst := fs.String("burst", unset, "starts allowed back to back after a quiet spell (none: the rate's N)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want ROUTE, got %d argument(s)", len(pos))}
	}
	route := pos[0]
	p := admin.LimitsPatch{MaxRunning: limitFlag(*maxRunning), Rate: limitFlag(*rate), Burst: limitFlag(*burst)}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if p.MaxRunning != nil || p.Rate != nil || p.Burst != nil {
		if _, err := c.SetLimits(e.Ctx, route, p); err != nil {
			return limitsRefusal(err)
		}
	}
	f, err := c.Flows(e.Ctx, route)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, f)
	}
	return printFlows(e.Stdout, f)
}

// limitFlag turns a flag's text into a patch field: nil when not given, ""
// for none.
func limitFlag(v string) *string {
	switch v {
	case unset:
		return nil
	case "none":
		v = ""
	}
	return &v
}

// limitsRefusal names the flag of a field the admin layer refused.
func limitsRefusal(err error) error {
	p := admin.Classify(err)
	flag := map[string]string{"max_running": "max-running", "rate": "rate", "burst": "burst"}[p.Field]
	if p.Class != admin.BadInput || flag == "" {
		return err
	}
	return usageError{fmt.Errorf("--%s: %s", flag, p.Msg)}
}

func orNone(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func printFlows(w io.Writer, f admin.Flows) error {
	l := f.Limits
	rate, burst := "none", "none"
	if l.Rate != "" {
		rate, burst = l.Rate, orNone(l.Burst)
		if l.Burst == 0 {
			burst = "the rate's"
		}
	}
	fmt.Fprintf(w, "route %s: max running %s, rate %s, burst %s\n", f.Route, orNone(l.MaxRunning), rate, burst)
	fmt.Fprintf(w, "keyed jobs: %d running, %d waiting; %d key(s) held back now; held back %d time(s) so far\n",
		f.Running, f.Waiting, f.Held, f.Throttled)
	if len(f.Busiest) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(f.Busiest))
	for _, b := range f.Busiest {
		held := ""
		switch {
		case b.Parked:
			held = "at its cap"
		case !b.HeldUntil.IsZero():
			held = "rate, until " + b.HeldUntil.UTC().Format("15:04:05.000")
		case b.ByRoute != "":
			held = "the route's " + b.ByRoute
		}
		rows = append(rows, []string{b.Task, b.Key, strconv.Itoa(b.Running), strconv.Itoa(b.Waiting), held})
	}
	fmt.Fprintln(w)
	return table(w, []string{"TASK", "KEY", "RUNNING", "WAITING", "HELD"}, rows)
}
