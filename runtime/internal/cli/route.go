package cli

import (
	"errors"
	"fmt"
	"strconv"
)

// cmdRoute is `route shards ROUTE [N]`: a route's shard count, read or set.
func cmdRoute(e *Env, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(e.Stdout, "usage: route shards ROUTE [--json]: print the route's shard count\n       route shards ROUTE N: spread the route over N shards (1-256; 1 unshards it)")
		return nil
	}
	if len(args) == 0 || args[0] != "shards" {
		return usageError{errors.New("want: route shards ROUTE, or route shards ROUTE N")}
	}
	e.Name = "route shards"
	fs := e.Flags("ROUTE [N] [--json]: print the route's shard count, or spread the route over N shards (1-256)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := Parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError{fmt.Errorf("want ROUTE and an optional N, got %d argument(s)", len(pos))}
	}
	route := pos[0]
	n := 0
	if len(pos) == 2 {
		if n, err = strconv.Atoi(pos[1]); err != nil {
			return usageError{fmt.Errorf("shards: want a whole number from 1 to 256, got %q", pos[1])}
		}
	}
	c, err := e.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if len(pos) == 2 {
		err = c.SetShards(e.Ctx, route, n)
	} else {
		n, err = c.Shards(e.Ctx, route)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.Stdout, map[string]any{"route": route, "shards": n})
	}
	fmt.Fprintf(e.Stdout, "route %s: %d shard(s)\n", route, n)
	return nil
}
