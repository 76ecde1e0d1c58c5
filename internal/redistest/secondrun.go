package redistest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// SecondRun, hooked into a client (HookSecondRun) and armed (During), runs
// every script call that succeeds a second time with the same arguments, as
// a client does that retries after losing the reply, and records how the
// namespace changed between the end of the first run and the end of the
// second. A script harmless when run twice changes nothing.
type SecondRun struct {
	t     testing.TB
	plain *redis.Client
	ns    string

	mu    sync.Mutex
	armed bool
	runs  int
	diffs []string
}

// HookSecondRun hooks a SecondRun into rdb, a client of one server (not a
// cluster), that watches namespace ns.
func HookSecondRun(t testing.TB, rdb *redis.Client, ns string) *SecondRun {
	plain := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr})
	t.Cleanup(func() { _ = plain.Close() })
	h := &SecondRun{t: t, plain: plain, ns: ns}
	rdb.AddHook(h)
	return h
}

// During arms h for f, and fails the test unless f ran at least one script
// and every second run left the namespace as the first run did.
func (h *SecondRun) During(f func()) {
	h.t.Helper()
	h.mu.Lock()
	h.armed, h.runs, h.diffs = true, 0, nil
	h.mu.Unlock()
	f()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = false
	if h.runs == 0 {
		h.t.Fatal("no script ran while armed")
	}
	for _, d := range h.diffs {
		h.t.Errorf("a second run with the same arguments changed the namespace:\n%s", d)
	}
}

func (h *SecondRun) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *SecondRun) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *SecondRun) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.mu.Lock()
		armed := h.armed
		h.mu.Unlock()
		if name := cmd.Name(); err != nil || !armed || (name != "evalsha" && name != "eval") {
			return err
		}
		first := Snapshot(h.t, h.plain, h.ns)
		if err := h.plain.Do(ctx, cmd.Args()...).Err(); err != nil && err != redis.Nil {
			h.t.Errorf("second run of %v failed: %v", cmd.Args()[:1], err)
		}
		d := Diff(first, Snapshot(h.t, h.plain, h.ns))
		h.mu.Lock()
		h.runs++
		if d != "" {
			h.diffs = append(h.diffs, d)
		}
		h.mu.Unlock()
		return err
	}
}

var _ redis.Hook = (*SecondRun)(nil)

// Snapshot dumps every key of namespace ns: its type, its whole value, and
// whether it expires.
func Snapshot(t testing.TB, rdb *redis.Client, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, ns+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			var m map[string]string
			m, err = rdb.HGetAll(ctx, k).Result()
			v = sortedFields(m)
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			var s []string
			s, err = rdb.SMembers(ctx, k).Result()
			slices.Sort(s)
			v = s
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		default:
			t.Fatalf("key %s has type %s, which Snapshot does not read", k, typ)
		}
		if err != nil {
			t.Fatalf("read %s %s: %v", typ, k, err)
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fmt.Sprintf("%s %q expires=%v", typ, fmt.Sprint(v), ttl > 0)
	}
	return out
}

func sortedFields(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Diff describes how two snapshots differ, "" when they are equal.
func Diff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "gone: "+k+" "+v)
		} else if w != v {
			out = append(out, "changed: "+k+"\n  from "+v+"\n  to   "+w)
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "new: "+k+" "+w)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
