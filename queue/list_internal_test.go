package queue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
)

// list.lua refuses by name every number of its window calls that Redis
// would not take (a position past a list index, a NaN or infinite score, a
// direction or count that is not one), before it sends Redis any command
// with it: the error is the script's own, not one from inside Redis.
func TestListScript_RefusesBadNumbersByName(t *testing.T) {
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		ctx := context.Background()
		q, err := New(rdb, redistest.Namespace(t))
		if err != nil {
			t.Fatal(err)
		}
		k := q.Keys("r")
		env, _ := EncodeEnvelope(Envelope{Args: []byte{0x90}})
		if _, err := q.Jobs.Enqueue(ctx, "r", Normal, []NewJob{{ID: NewID("r", time.Now()), Name: "t", Envelope: env}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		listKeys := []string{k.Payloads(), k.Leases(), k.Scheduled(), k.Dead(), k.Job("x"), k.Job("a"), k.List(High), k.List(Normal), k.List(Low)}
		for _, tc := range []struct {
			keys []string
			args []any
			says string
		}{
			{listKeys, []any{"list", 1, 50, 2, "9223372036854775807", "x", "a"}, "position"},
			{listKeys, []any{"list", -1, 50, 2, "100000000000000000", "x", "a"}, "position"},
			{listKeys, []any{"list", 1, 50, 2, "-1", "x", "a"}, "position"},
			{listKeys, []any{"list", 1, 50, 2, "0.5", "x", "a"}, "position"},
			{listKeys, []any{"list", 1, 50, 2.5, 0, "x", "a"}, "list number"},
			{listKeys, []any{"list", 2, 50, 2, 0, "x", "a"}, "direction"},
			{listKeys, []any{"list", 1, "1e17", 2, 0, "x", "a"}, "count"},
			{listKeys, []any{"list", 1, 0, 2, 0, "x", "a"}, "count"},
			{[]string{k.Scheduled()}, []any{"zset", 1, 50, "nan", "x"}, "score"},
			{[]string{k.Scheduled()}, []any{"zset", 1, 50, "inf", "x"}, "score"},
			{[]string{k.Scheduled()}, []any{"zset", -1, 50, "-inf", "x"}, "score"},
			{[]string{k.Scheduled()}, []any{"zset", 1, 50, "abc", "x"}, "score"},
			{[]string{k.Scheduled()}, []any{"zset", 0, 50, "5", "x"}, "direction"},
		} {
			err := q.s.list.Run(ctx, rdb, tc.keys, tc.args...).Err()
			if err == nil || !refused(err) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("list.lua %v = %v; want the script's own refusal naming the %s", tc.args, err, tc.says)
			}
		}
	})
}
