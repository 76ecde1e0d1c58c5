package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime/internal/workflows"
	"github.com/bananas-go/bananas/runtime/internal/workflows/redisstore"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// eachBackend runs f against the embedded server and a real redis-server,
// each test in its own namespace, with the store of that namespace over q.
func eachBackend(t *testing.T, f func(t *testing.T, q *queue.Queue, st *redisstore.Store)) {
	t.Helper()
	redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
		q := newQueue(t, rdb)
		f(t, q, redisstore.New(q))
	})
}

// twiceCase is a story of calls that h.During runs twice each.
type twiceCase struct {
	name string
	run  func(t *testing.T, st *redisstore.Store, h *redistest.SecondRun)
}

// runTwiceCases runs each case on every backend, with every script call
// run a second time and the namespace compared.
func runTwiceCases(t *testing.T, cases []twiceCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			redistest.EachBackend(t, func(t *testing.T, rdb *redis.Client) {
				q := newQueue(t, rdb)
				c.run(t, redisstore.New(q), redistest.HookSecondRun(t, rdb, q.Namespace()))
			})
		})
	}
}

func newQueue(t *testing.T, rdb redis.UniversalClient) *queue.Queue {
	t.Helper()
	q, err := queue.New(rdb, redistest.Namespace(t))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// The Store is the workflows.Store a program runs the machine on.
var _ workflows.Store = (*redisstore.Store)(nil)
