package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/queue"
)

// onceTwiceCases run each Once script twice with the same arguments.
var onceTwiceCases = []twiceCase{
	{"once: claim free, own, held; done with and without the claim; release", func(t *testing.T, q *queue.Queue, h *twice) {
		ctx := context.Background()
		q.Client().Set(ctx, q.OnceKeys("held").Claim, "other", time.Minute)
		h.during(func() {
			if st, _, err := q.OnceClaim(ctx, "free", "tok", time.Minute); st != queue.OnceClaimed || err != nil {
				t.Fatalf("claim free = %v, %v", st, err)
			}
			if st, _, err := q.OnceClaim(ctx, "held", "tok", time.Minute); st != queue.OnceHeld || err != nil {
				t.Fatalf("claim held = %v, %v", st, err)
			}
			if marked, err := q.OnceDone(ctx, "free", "tok", time.Hour); !marked || err != nil {
				t.Fatalf("done = %v, %v", marked, err)
			}
			if marked, err := q.OnceDone(ctx, "held", "tok", time.Hour); !marked || err != nil {
				t.Fatalf("done under another's claim = %v, %v", marked, err)
			}
			if st, _, err := q.OnceClaim(ctx, "free", "tok2", time.Minute); st != queue.OnceDone || err != nil {
				t.Fatalf("claim done = %v, %v", st, err)
			}
			if _, _, err := q.OnceClaim(ctx, "failing", "tok", time.Minute); err != nil {
				t.Fatal(err)
			}
			if released, err := q.OnceRelease(ctx, "failing", "tok"); !released || err != nil {
				t.Fatalf("release = %v, %v", released, err)
			}
		})
	}},
}

func TestOnceScripts_SecondRunWithSameArgumentsChangesNothing(t *testing.T) {
	runTwiceCases(t, onceTwiceCases)
}

// A user's key may hold braces or any byte: its keys carry a hash tag of
// their own, the same for the marker and the claim, made of hex digits only.
func TestOnceKeys_AnyKeyGetsOneHashTagOfItsOwn(t *testing.T) {
	seen := map[string]string{}
	for _, key := range []string{"a", "b", "{a}", "}{", "x{y}z", "\x00\xff", strings.Repeat("k", 10000)} {
		k := queue.OnceKeysOf("ns", key)
		tag := k.Channel[strings.Index(k.Channel, "{"):]
		if !strings.HasPrefix(k.Marker, k.Channel+":") || !strings.HasPrefix(k.Claim, k.Channel+":") || k.Marker == k.Claim {
			t.Fatalf("keys of %q = %+v; want the marker and the claim under the channel's name", key, k)
		}
		if len(tag) != 34 || strings.Trim(tag[1:33], "0123456789abcdef") != "" || tag[33] != '}' {
			t.Fatalf("hash tag of %q = %s; want 32 hex digits in braces", key, tag)
		}
		if other, ok := seen[tag]; ok {
			t.Fatalf("keys %q and %q share hash tag %s", key, other, tag)
		}
		seen[tag] = key
	}
}

// Garbage in a Once key is an error naming it before any write, never a
// claim made around it; a claim without an expiry is given one, so that it
// ends as a dead holder's does.
func TestOnceClaim_GarbageKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		ctx := context.Background()
		for _, name := range []string{"marker", "claim"} {
			k := q.OnceKeys("garbage " + name)
			key := map[string]string{"marker": k.Marker, "claim": k.Claim}[name]
			q.Client().RPush(ctx, key, "x")
			_, _, err := q.OnceClaim(ctx, "garbage "+name, "tok", time.Minute)
			if err == nil || !strings.Contains(err.Error(), "once "+name) || !strings.Contains(err.Error(), "not a string") {
				t.Fatalf("claim with a list as its %s = %v; want an error naming it", name, err)
			}
			if n, _ := q.Client().Exists(ctx, k.Claim, k.Marker).Result(); n != 1 {
				t.Fatalf("%d keys after the refused claim; want the garbage alone", n)
			}
		}
		k := q.OnceKeys("forever")
		q.Client().Set(ctx, k.Claim, "lost token", 0)
		st, left, err := q.OnceClaim(ctx, "forever", "tok", time.Minute)
		if st != queue.OnceHeld || err != nil || left != time.Minute {
			t.Fatalf("claim = %v, %s, %v; want held, for the claim ttl", st, left, err)
		}
		if ttl, _ := q.Client().PTTL(ctx, k.Claim).Result(); ttl <= 0 {
			t.Fatalf("pttl of the claim without expiry = %s; want one given", ttl)
		}
		q.Client().Del(ctx, q.OnceKeys("garbage marker").Marker)
		q.Client().HSet(ctx, q.OnceKeys("garbage marker").Marker, "f", "v")
		if _, err := q.OnceDone(ctx, "garbage marker", "tok", time.Hour); err == nil || !strings.Contains(err.Error(), "once marker") {
			t.Fatalf("done over a hash marker = %v; want an error naming the marker", err)
		}
		if typ, _ := q.Client().Type(ctx, q.OnceKeys("garbage marker").Marker).Result(); typ != "hash" {
			t.Fatalf("marker after the refused done is a %s; want the garbage left as it was", typ)
		}
	})
}
