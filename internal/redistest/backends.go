package redistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// EachBackend runs f as parallel subtests against the two servers Bananas
// supports in one process: "embedded", a private miniredis whose TTLs follow
// the wall clock (as behind mem://), and "redis", the shared real
// redis-server. f gets a client of the one it runs against.
func EachBackend(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"embedded", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "redis" {
				f(t, Shared(t).Client(t))
				return
			}
			m := miniredis.RunT(t)
			m.ClockTTL(true)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			f(t, rdb)
		})
	}
}

// EachURL runs f as parallel subtests against the two servers as a program
// names them in runtime.Connect: "embedded", mem:// (a private server per
// client), and "redis", the shared real redis-server's URL. A test of its
// own namespace (Namespace) shares the real one safely.
func EachURL(t *testing.T, f func(t *testing.T, url string)) {
	t.Helper()
	t.Parallel()
	for _, name := range []string{"embedded", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := "mem://"
			if name == "redis" {
				url = Shared(t).URL()
			}
			f(t, url)
		})
	}
}
