package cli

import (
	"errors"
	"fmt"

	"github.com/bananas-go/bananas/bananastype"
	"github.com/bananas-go/bananas/queue"
)

// cmdKeys is `keys rotate`: it reseals the args of every waiting and
// scheduled job under the newest key of the process's BANANAS_KEYS, and
// says how many, so that an operator drops an old key once it reports 0.
func cmdKeys(e *Env, args []string) error {
	fs := e.Flags("rotate [--json]: reseal the args of every waiting and scheduled job, and workflows' values, under the newest of BANANAS_KEYS (newest first); drop an old key once it reports 0 resealed")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "rotate" {
		return usageError{errors.New(`keys wants one verb: "keys rotate"`)}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if c.RotateKeys == nil {
		return usageError{errors.New("this program cannot rotate keys")}
	}
	n, err := c.RotateKeys(e.Ctx)
	entry := bananastype.AuditEntry{Who: cliWho(), Via: "cli", What: "rotateKeys", Outcome: "ok",
		Detail: fmt.Sprintf("%d resealed, %d already under the newest key, %d left alone", n.Resealed, n.Already, n.LeftAlone)}
	if errors.Is(err, queue.ErrNoResealKeys) {
		entry.Outcome, entry.Error, entry.Detail = "refused", err.Error(), ""
	} else if err != nil {
		entry.Outcome, entry.Error, entry.Detail = "failed", err.Error(), ""
	}
	if aerr := c.Admin.Audit(e.Ctx, entry); aerr != nil {
		fmt.Fprintf(e.Stderr, "warning: audit entry not stored: %v\n", aerr)
	}
	if errors.Is(err, queue.ErrNoResealKeys) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, n)
	}
	fmt.Fprintf(e.Stdout, "resealed %d jobs (%d already under the newest key, %d left alone: running, or taken or changed meanwhile)\n", n.Resealed, n.Already, n.LeftAlone)
	if n.Unopened > 0 {
		fmt.Fprintf(e.Stdout, "%d jobs sealed under a key not in BANANAS_KEYS (or broken) were not resealed: keep the key that sealed them\n", n.Unopened)
	}
	if n.Garbage > 0 {
		fmt.Fprintf(e.Stdout, "%d jobs with an unreadable envelope were not touched\n", n.Garbage)
	}
	return nil
}
