package queue

import (
	"strconv"
	"strings"
	"time"
)

// Flow control: keyed jobs, their round-robin and their limits.
//
// A job enqueued with NewJob.Keyed belongs to a flow, the jobs of one task
// and one key. It waits in the route's keyed set of its priority (a zset
// ordered by member: flow, order of arrival, id), not in a ready list, and
// its flow is in that priority's ring while the flow may start a job:
//
//	enqueue ──► keyed:<p> (flow's range) ──► ring:<p> ──fetch──► leased ──► ack/fail/…
//	                                            │  ▲                            │
//	                        at its cap or rate  ▼  │ due, or a slot freed        │
//	                                           held ◄─────────────────────────────┘
//
// fetch.lua serves each priority's ring round-robin, one job per flow per
// turn, so a key with a long backlog delays another key's first job by at
// most one turn of the ring; a flow at its task's cap (max running, counted
// per flow by the ids of its running jobs, each checked against its lease)
// or out of rate leaves the ring for the held set, and holds nobody back. A
// slot is freed by whatever ends the lease — ack, fail, cancel, hand-back,
// reap — and by the lease running out, so a killed worker's slots come back
// by its lease deadline. Every step is in the scripts of the transition it
// belongs to; see scripts/_flow.lua.

// FlowKeys returns the route's flow keys, in the order every flow script
// takes them as its last KEYS: the keyed sets and rings of each priority,
// the flows, held, flowof and limits hashes, the idle set and the stats.
func (k Keys) FlowKeys() []string {
	return []string{
		k.Keyed(High), k.Keyed(Normal), k.Keyed(Low),
		k.Ring(High), k.Ring(Normal), k.Ring(Low),
		k.Flows(), k.Held(), k.FlowOf(), k.Limits(), k.Idle(), k.Stats(),
	}
}

// priorityDigits writes priorities as fetch.lua reads them, in drain order:
// a digit each, 1 high, 2 normal, 3 low.
func priorityDigits(priorities []Priority) string {
	var b strings.Builder
	for i, p := range Priorities {
		for _, want := range priorities {
			if want == p {
				b.WriteByte(byte('1' + i))
			}
		}
	}
	return b.String()
}

// dueMark starts the payload of the entry with which fetch.lua says when a
// held flow is looked at again.
const dueMark = "due:"

// dueOf finds that entry in a fetch's reply.
func dueOf(reply []string) (time.Time, bool) {
	for i := 1; i+1 < len(reply); i += 2 {
		if reply[i] == "" && strings.HasPrefix(reply[i+1], dueMark) {
			n, err := strconv.ParseInt(reply[i+1][len(dueMark):], 10, 64)
			if err == nil {
				return time.UnixMilli(n), true
			}
		}
	}
	return time.Time{}, false
}
