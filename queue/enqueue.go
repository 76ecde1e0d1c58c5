package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewJob is one job to enqueue.
type NewJob struct {
	ID         string
	Name       string
	Envelope   []byte    // EncodeEnvelope output
	MaxRetries int       // failed runs retried before the job is dead-lettered
	RunAt      time.Time // zero or not after now: ready at once
	UniqueKey  string    // with UniqueTTL > 0: a job of this key enqueues once while the key is held
	UniqueTTL  time.Duration
	// UniqueUntil is the point of the job's life its unique key is held
	// until (UntilEnded when empty); UniqueTTL bounds it whatever happens.
	UniqueUntil Until
	// Debounce, with a unique key: a job whose key is held by a job that
	// still waits is not written; the holder takes its envelope and runs
	// Debounce from now, at the latest DebounceMax (when > 0) after the
	// holder's first enqueue (see scripts/enqueue.lua).
	Debounce    time.Duration
	DebounceMax time.Duration
	// ChosenID marks an id the caller chose (WithID): the script checks it is
	// free. Ids from NewID are unique by construction and skip that read.
	ChosenID bool
	// Keyed puts the job in its flow, the jobs of Name and Key (flow.go):
	// it waits in the route's keyed set instead of a ready list, the flows
	// are served round-robin within each priority, and the task's limits
	// (SetTaskLimits) hold it back per flow. Key may be "": the task's jobs
	// form one flow (a task limited as a whole). CheckKey bounds Key.
	Keyed bool
	Key   string
	// ExpireAt, when set, is when the job expires if it has not started by
	// then: it ends with StatusExpired, never run (expire.go).
	ExpireAt time.Time
	// OnBusy is what a keyed job does when its key is busy — BusyCap (its
	// task's max running) or more of the key's jobs running or waiting:
	// OnBusyWait ("") waits its turn, OnBusyDrop is refused (its holder is
	// BusyHolder), OnBusyCancelRunning asks the key's oldest running jobs
	// to stop so that it starts (see scripts/enqueue.lua).
	OnBusy  string
	BusyCap int

	// payload, when set, is the job's light-job payload, built by EnqueueOne
	// on the caller's goroutine so the coalesced flush, which is serial, has
	// less to do per job.
	payload string
}

// enqueueLinger bounds how long a coalesced enqueue waits for the producers
// answered by the previous flush to come back (see committer). It is a bound
// on client-side time — a producer's turn between two enqueues — not on a
// network round trip, and no enqueue waits when the previous round had fewer
// than lingerMin calls (low load).
const enqueueLinger = 200 * time.Microsecond

// receiptTTL is how long an enqueue call with a caller-chosen id keeps its
// reply for a retry of the call (see scripts/enqueue.lua): far longer than a
// client's retries of one command take, or a command held up in a stalled
// connection is delivered.
const receiptTTL = 10 * time.Minute

// enqueueChunk bounds one script call; larger batches take several calls.
const enqueueChunk = 1000

// Enqueue writes jobs of one route and priority, up to enqueueChunk of them in
// one round trip. holders[i] is "" when jobs[i] was written, and otherwise the
// id of the job that already holds its id or unique key.
func (js Jobs) Enqueue(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) (holders []string, err error) {
	if err := js.checkEnqueue(ctx, route, priority); err != nil {
		return nil, err
	}
	for i := range jobs {
		if err := checkNewJob(route, &jobs[i]); err != nil {
			return nil, err
		}
	}
	holders = make([]string, 0, len(jobs))
	for start := 0; start < len(jobs); start += enqueueChunk {
		end := min(start+enqueueChunk, len(jobs))
		h, err := js.enqueueChunk(ctx, route, priority, jobs[start:end], now)
		if err != nil {
			return holders, err
		}
		holders = append(holders, h...)
	}
	return holders, nil
}

// EnqueueOne writes one job. Concurrent calls for the same route and priority
// are coalesced into one call to Redis (see committer), so many producers cost
// few round trips. The result is as for Enqueue. The job is checked here, on
// the caller's goroutine, so that one bad job never fails the others it would
// be coalesced with.
func (js Jobs) EnqueueOne(ctx context.Context, route string, priority Priority, job NewJob) (holder string, err error) {
	if err := js.checkEnqueue(ctx, route, priority); err != nil {
		return "", err
	}
	if err := checkNewJob(route, &job); err != nil {
		return "", err
	}
	if now := js.q.Now(); isPlain(&job, now) {
		job.payload = payloadOf(job.Name, string(priority), job.MaxRetries, ms(now), job.Envelope)
	} else if isLightUnique(&job, now) {
		job.payload = uniquePrefix(&job) + payloadOf(job.Name, string(priority), job.MaxRetries, ms(now), job.Envelope)
	}
	return js.q.enqs.do(ctx, enqGroup{route, priority}, job)
}

// enqGroup is what single enqueues are coalesced by: one flush writes to one
// ready list.
type enqGroup struct {
	route    string
	priority Priority
}

func (js Jobs) checkEnqueue(ctx context.Context, route string, priority Priority) error {
	if err := CheckShardRoute(route); err != nil {
		return err
	}
	if !ValidPriority(priority) {
		return fmt.Errorf("invalid priority %q: use high, normal or low", priority)
	}
	return js.q.noteRoute(ctx, route)
}

// enqueueChunk writes up to enqueueChunk jobs that checkNewJob accepted, then
// adds the route to the routes set again if this process has not lately (see
// routeWritten): after an error too, whose jobs may have been written.
func (js Jobs) enqueueChunk(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	defer js.q.routeWritten(route)
	return js.writeChunk(ctx, route, priority, jobs, now)
}

// writeChunk is enqueueChunk's write.
func (js Jobs) writeChunk(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	if plain(jobs, now) {
		return js.enqueuePlain(ctx, route, priority, jobs, now)
	}
	if lightUnique(jobs, now) {
		return js.enqueueLightUnique(ctx, route, priority, jobs, now)
	}
	return js.writeChunkDebounced(ctx, route, priority, jobs, now)
}

// writeChunkOnce is one enqueue.lua call for writeChunk.
func (js Jobs) writeChunkOnce(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	k := js.q.Keys(route)
	// A call with a caller-chosen id keeps a receipt of its reply, so that a
	// retry of it is told "written" for its own jobs, not "duplicate".
	receipt, rttl := k.Stats(), int64(0)
	for i := range jobs {
		if jobs[i].ChosenID {
			receipt, rttl = k.Receipt(callToken()), durMS(receiptTTL)
			break
		}
	}
	var held []string // per job, the holder of its key a debounce read
	for i := range jobs {
		if jobs[i].Debounce > 0 {
			held = js.readHolders(ctx, k, jobs)
			break
		}
	}
	keys := make([]string, 0, 22+4*len(jobs))
	keys = append(keys, k.List(priority), k.Scheduled(), k.Stats(), k.Payloads(), receipt, k.Series(HourOf(now)))
	args := make([]any, 0, 7+13*len(jobs))
	args = append(args, ms(now), string(priority), k.WakeChannel(), ScheduleChannel(js.q.ns), len(jobs), rttl)
	for i, j := range jobs { // checked by Enqueue or EnqueueOne (checkNewJob)
		job := k.Job(j.ID)
		unique := job
		var uttl int64
		if j.UniqueTTL > 0 && j.UniqueKey != "" {
			unique, uttl = k.Unique(j.UniqueKey), max(1, durMS(j.UniqueTTL))
		}
		runAt := msOrZero(j.RunAt)
		check := 0
		if j.ChosenID {
			check = 1
		}
		holderJob, until := job, ""
		if held != nil && held[i] != "" {
			holderJob = k.Job(held[i])
		}
		if uttl > 0 {
			until = j.UniqueUntil.code()
		}
		keys = append(keys, job, unique, k.Result(j.ID), holderJob)
		flow := ""
		if j.Keyed {
			flow = j.Name + "|" + j.Key
		}
		args = append(args, j.ID, j.Name, j.Envelope, j.MaxRetries, runAt, uttl, check, flow, until, durMS(j.Debounce), durMS(j.DebounceMax))
	}
	keys = append(keys, k.Expiry(), k.Leases(), k.Cancels(), k.Idle())
	keys = append(keys, k.FlowKeys()...)
	for _, j := range jobs {
		args = append(args, msOrZero(j.ExpireAt))
	}
	for _, j := range jobs {
		policy := ""
		if j.OnBusy != OnBusyWait && j.Keyed {
			policy = j.OnBusy + ":" + strconv.Itoa(j.BusyCap)
		}
		args = append(args, policy)
	}
	args = append(args, k.CancelChannel())
	// Retry-safe: enqueue.lua answers a second run of this call as the first.
	res, err := js.q.runWrite(ctx, js.q.s.enqueue, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("enqueue to route %s: %w", route, err)
	}
	return strs(res), nil
}

// DebouncedMark starts a holder Enqueue returns for a job that debounced
// the job holding its unique key (the holder's id follows): that job took
// its args and due time, and the job itself was not written.
const DebouncedMark = "{d}"

// rereadMark starts enqueue.lua's answer for a debounced job whose key has
// changed hands since its holder was read: nothing of that job was written.
const rereadMark = "{r}"

// maxRereads bounds how often a debounced enqueue reads its key's holder
// again when the key keeps changing hands under it.
const maxRereads = 5

// writeChunkDebounced is writeChunk for a chunk that is not plain: the jobs
// enqueue.lua answers "{r}" for (debounced jobs whose key changed hands
// since its holder was read; nothing of them was written) are sent again,
// alone, with their holders read again.
func (js Jobs) writeChunkDebounced(ctx context.Context, route string, priority Priority, jobs []NewJob, now time.Time) ([]string, error) {
	out, err := js.writeChunkOnce(ctx, route, priority, jobs, now)
	for try := 0; err == nil; try++ {
		var again []int
		for i := range out {
			if strings.HasPrefix(out[i], rereadMark) {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		if try == maxRereads {
			return out, fmt.Errorf("enqueue to route %s: a debounced job's unique key changed hands %d times while it was written", route, maxRereads+1)
		}
		sub := make([]NewJob, len(again))
		for n, i := range again {
			sub[n] = jobs[i]
		}
		var h []string
		if h, err = js.writeChunkOnce(ctx, route, priority, sub, now); err == nil {
			for n, i := range again {
				out[i] = h[n]
			}
		}
	}
	return out, err
}

// readHolders reads, for each debounced job of jobs, the job holding its
// unique key ("" for the others, and for a key nobody holds).
func (js Jobs) readHolders(ctx context.Context, k Keys, jobs []NewJob) []string {
	pipe := js.q.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(jobs))
	for i, j := range jobs {
		if j.Debounce > 0 && j.UniqueTTL > 0 && j.UniqueKey != "" {
			cmds[i] = pipe.Get(ctx, k.Unique(j.UniqueKey))
		}
	}
	_, _ = pipe.Exec(ctx) // a failed read leaves "": the script then answers a plain duplicate or "{r}"
	out := make([]string, len(jobs))
	for i, c := range cmds {
		if c != nil {
			out[i] = c.Val()
		}
	}
	return out
}

// Until is the point of a job's life until which its unique key is held.
type Until string

const (
	UntilStarted   Until = "started"   // the job's first start frees it
	UntilCompleted Until = "completed" // its completion frees it; a death or cancel leaves it to its TTL
	UntilEnded     Until = "ended"     // completed, dead or canceled frees it; a retry keeps it (the default)
)

// ParseUntil reads an Until by its name; "" is UntilEnded.
func ParseUntil(s string) (Until, error) {
	switch Until(s) {
	case "", UntilEnded:
		return UntilEnded, nil
	case UntilStarted, UntilCompleted:
		return Until(s), nil
	}
	return "", fmt.Errorf("invalid unique until %q: use started, completed or ended", s)
}

// code is the letter the job hash keeps (field uu, see scripts/_unique.lua).
func (u Until) code() string {
	switch u {
	case UntilStarted:
		return "s"
	case UntilCompleted:
		return "c"
	}
	return "e"
}
