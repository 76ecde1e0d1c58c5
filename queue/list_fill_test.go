package queue_test

import (
	"slices"
	"testing"

	"github.com/bananas-go/bananas/queue"
)

// A route holds keyed jobs (in the keyed sets, not the ready lists) and
// unkeyed ones on several priorities. A page of limit N holds min(N, left)
// jobs whichever of the route's lists and sets they wait in, and the page
// that lists the last job has no Next: no page is empty while jobs remain,
// and no cursor leads to an empty page.
func TestListJobs_PageFilledAcrossReadyListsAndKeyedSets(t *testing.T) {
	eachBackend(t, func(t *testing.T, q *queue.Queue) {
		var all []string
		// Keyed normal only: the ready lists and keyed high are empty, the
		// case of a paused route whose task has a key.
		all = append(all, enqueueKeyed(t, q, "r", queue.Normal, "t", "A", 12)...)
		all = append(all, enqueueKeyed(t, q, "r", queue.Normal, "t", "B", 10)...)
		first := list(t, q, queue.ListQuery{State: queue.ListPending, Limit: 50})
		if len(first.Jobs) != 22 || first.Next != "" {
			t.Fatalf("22 keyed jobs, limit 50: page of %d, next %q; want 22 and no next", len(first.Jobs), first.Next)
		}
		all = append(all, enqueueN(t, q, queue.High, "t", 3, q.Now())...)
		all = append(all, enqueueKeyed(t, q, "r", queue.Low, "t", "C", 4)...)
		all = append(all, enqueueN(t, q, queue.Low, "t", 2, q.Now())...)
		total := len(all) // 31
		for _, newest := range []bool{false, true} {
			for _, limit := range []int{1, 2, 3, 5, 7, 22, 30, 31, 32, 50} {
				lq := queue.ListQuery{State: queue.ListPending, Limit: limit, Newest: newest}
				var shown []string
				for pages := 0; ; pages++ {
					if pages > total {
						t.Fatalf("limit %d: the listing never ends", limit)
					}
					p := list(t, q, lq)
					want := min(limit, total-len(shown))
					if len(p.Jobs) != want {
						t.Fatalf("newest %v, limit %d, page %d: %d jobs, want %d (%d of %d shown)", newest, limit, pages, len(p.Jobs), want, len(shown), total)
					}
					for _, j := range p.Jobs {
						shown = append(shown, j.ID)
					}
					if len(shown) == total && p.Next != "" {
						t.Fatalf("newest %v, limit %d: every job shown and still a next %q", newest, limit, p.Next)
					}
					if p.Next == "" {
						break
					}
					lq.Cursor = p.Next
				}
				got, want := slices.Clone(shown), slices.Clone(all)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("newest %v, limit %d: shown %d jobs, want each of the %d once", newest, limit, len(shown), total)
				}
			}
		}
		// A task filter and a priority filter go through the keyed sets too.
		p := list(t, q, queue.ListQuery{State: queue.ListPending, Task: "t", Limit: 50})
		if len(p.Jobs) != total || p.Next != "" {
			t.Fatalf("task filter: %d jobs, next %q; want %d and no next", len(p.Jobs), p.Next, total)
		}
		p = list(t, q, queue.ListQuery{State: queue.ListPending, Priority: queue.Low, Limit: 50})
		if len(p.Jobs) != 6 || p.Next != "" {
			t.Fatalf("priority low: %d jobs, next %q; want 6 and no next", len(p.Jobs), p.Next)
		}
	})
}
