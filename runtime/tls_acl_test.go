package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// A rediss:// URL with tls_ca_file trusts the server whose certificate that
// CA signed, and no other: not through the system's roots, not through
// another CA, not under another name.
func TestConnect_RedissVerifiesTheServerAgainstTheCAFile(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs, false)

	runsJobs(t, connect(t, srv.TLSURL(false)), "default")
	// The certificate names localhost too: the name in the URL is checked.
	byName := "rediss://localhost:" + strconv.Itoa(srv.TLSPort) + "/0?" + certs.Query(false)
	runsJobs(t, connect(t, byName), "default")

	ca := "tls_ca_file=" + certs.CAFile
	for _, tc := range []struct{ name, url, want string }{
		{"the system's roots", "rediss://" + srv.TLSAddr() + "/0", "certificate signed by unknown authority"},
		{"another CA", "rediss://" + srv.TLSAddr() + "/0?tls_ca_file=" + certs.OtherCAFile, "certificate signed by unknown authority"},
		{"a name the certificate lacks", "rediss://" + srv.TLSAddr() + "/0?" + ca + "&tls_server_name=redis.example", "redis.example"},
		{"plain TCP to the TLS port", "redis://" + srv.TLSAddr() + "/0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := connectErr(t, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect with %s = %v; want an error containing %q", tc.name, err, tc.want)
			}
		})
	}
}

// A server run with tls-auth-clients yes serves a client that presents the
// certificate of tls_cert_file and tls_key_file, the runtime's API and the
// command line alike, and refuses one that presents none.
func TestConnect_RedissWithClientCertificateReachesAServerThatRequiresOne(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs, true)

	runsJobs(t, connect(t, srv.TLSURL(true)), "default", "other")

	a := &app{t: t, env: map[string]string{"REDIS_URL": srv.TLSURL(true), "BANANAS_NAMESPACE": redistest.Namespace(t), "LOG_LEVEL": "error"}}
	a.background("worker")
	if out := a.ok("enqueue", "count_words", `{"Body": "over tls"}`, "--wait"); strings.TrimSpace(out) != "2" {
		t.Fatalf("enqueue --wait over TLS printed %q, want 2", out)
	}

	if err := connectErr(t, srv.TLSURL(false)); err == nil {
		t.Fatal("Connect without a client certificate succeeded; the server requires one")
	}
}

// Every TLS parameter that cannot work is refused before any connection,
// saying which parameter, which file and what is wrong, and never showing
// the URL's password; the binary exits 2 naming REDIS_URL.
func TestConnect_TLSOptionsThatCannotWorkAreRefusedNamingWhatIsWrong(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const server = "rediss://app:s3cret@127.0.0.1:1/0?"
	missing := filepath.Join(t.TempDir(), "missing-ca.pem")
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"an unreadable CA file", server + "tls_ca_file=" + missing, []string{"tls_ca_file", missing, "no such file"}},
		{"a CA file without PEM", server + "tls_ca_file=" + notPEM, []string{"tls_ca_file", notPEM, "no PEM"}},
		{"a certificate without its key", server + "tls_cert_file=" + certs.ClientCertFile, []string{"tls_cert_file needs tls_key_file"}},
		{"a key without its certificate", server + "tls_key_file=" + certs.ClientKeyFile, []string{"tls_key_file needs tls_cert_file"}},
		{"a certificate file without PEM", server + "tls_cert_file=" + notPEM + "&tls_key_file=" + certs.ClientKeyFile, []string{"tls_cert_file", notPEM, "PEM"}},
		{"a key of another certificate", server + "tls_cert_file=" + certs.ClientCertFile + "&tls_key_file=" + certs.ServerKeyFile, []string{"tls_key_file", "does not match"}},
		{"an empty CA file name", server + "tls_ca_file=", []string{"tls_ca_file is empty"}},
		{"skip_verify that is not a boolean", server + "skip_verify=maybe", []string{"skip_verify", "maybe"}},
		{"TLS parameters without TLS", "redis://app:s3cret@127.0.0.1:1/0?tls_ca_file=" + certs.CAFile, []string{"tls_ca_file needs TLS", "rediss://"}},
		{"TLS parameters on a plain cluster", "redis+cluster://app:s3cret@127.0.0.1:1,127.0.0.1:2?tls_cert_file=" + certs.ClientCertFile, []string{"tls_cert_file needs TLS", "rediss+cluster://"}},
		{"a cluster parameter that is not TLS", "rediss+cluster://app:s3cret@127.0.0.1:1?dial_timeout=3s", []string{"unknown option dial_timeout"}},
		{"a cluster CA file without PEM", "rediss+cluster://app:s3cret@127.0.0.1:1?tls_ca_file=" + notPEM, []string{"tls_ca_file", notPEM, "no PEM"}},
		{"a malformed port", "rediss://app:s3cret@127.0.0.1:port/0?tls_ca_file=" + certs.CAFile, []string{"invalid port"}},
		{"a malformed cluster password", "rediss+cluster://app:s3cret%zz@127.0.0.1:1", []string{"invalid URL escape"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := connectErr(t, tc.url)
			if err == nil {
				t.Fatalf("Connect(%s) succeeded", tc.url)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Connect error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Connect error %q shows the password", err)
			}
		})
	}

	a := &app{t: t, env: map[string]string{"REDIS_URL": server + "tls_ca_file=" + missing, "BANANAS_NAMESPACE": redistest.Namespace(t)}}
	code, out, errOut := a.run("queues")
	if code != runtime.ExitUsage || !strings.Contains(errOut, "REDIS_URL") || !strings.Contains(errOut, "tls_ca_file") || strings.Contains(out+errOut, "s3cret") {
		t.Fatalf("queues with a missing CA file = %d %q %q; want 2 naming REDIS_URL and tls_ca_file, without the password", code, out, errOut)
	}
}

// rediss+cluster:// reaches every master of a cluster that speaks only TLS
// (tls-cluster yes, client certificates required), as the ACL user of
// docs/OPERATIONS.md, which the cluster client needs nothing more than.
func TestConnect_RedissClusterRunsJobsOnEveryMasterOverTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	cl := redistest.StartTLSCluster(t, certs)
	ns := redistest.Namespace(t)
	var admins []*redis.Client
	for _, n := range cl.Nodes() {
		admin := n.Client(t)
		createACLUser(t, admin, aclSetUser(t, "bananas-app", "app-pw", ns))
		admins = append(admins, admin)
	}

	nodes := "bananas-app:app-pw@" + strings.Join(cl.TLSAddrs(), ",")
	url := "rediss+cluster://" + nodes + "?" + certs.Query(true)
	c := connect(t, url, runtime.WithNamespace(ns))
	runsJobs(t, c, "r1", "r2", "r3", "r4", "r5", "r6")

	holding := 0
	for _, admin := range admins {
		keys, err := admin.Keys(ctxT(t), ns+":*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			holding++
		}
	}
	if holding < 2 {
		t.Fatalf("the jobs' keys are on %d of 3 masters; the test would not cross nodes", holding)
	}
	for i, admin := range admins {
		if denied := aclDenials(t, admin); len(denied) > 0 {
			t.Errorf("node %d refused the runtime: %v", i, denied)
		}
	}

	client := "&tls_cert_file=" + certs.ClientCertFile + "&tls_key_file=" + certs.ClientKeyFile
	for _, tc := range []struct{ name, url string }{
		{"without a client certificate", "rediss+cluster://" + nodes + "?" + certs.Query(false)},
		{"trusting another CA", "rediss+cluster://" + nodes + "?tls_ca_file=" + certs.OtherCAFile + client},
		{"in plain TCP", "redis+cluster://" + nodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := connectErr(t, tc.url, runtime.WithNamespace(ns)); err == nil {
				t.Fatalf("Connect %s succeeded", tc.name)
			}
		})
	}
}

// The ACL SETUSER line of docs/OPERATIONS.md grants all a worker, a
// scheduler, a producer and the command line use, on their ordinary paths
// and on those of faults (a running job canceled, a shutdown handing a job
// back, a job key that holds garbage): everything works under it, and Redis
// logs no refusal but CONFIG GET (the worker's eviction check, left out on
// purpose and skipped when refused).
func TestACL_TheDocumentedUserRunsWorkersProducersAndTheCommandLine(t *testing.T) {
	t.Parallel()
	r := newACLRig(t)
	r.enqueueWaitingForReplicasIsStoredNotRefused()
	stopWorker := r.startWorker()
	r.aSecondWorkerStandsByForTheRoutesKeeper()
	dead := r.producersEnqueueAwaitDelayDedupeAndFail()
	r.aJobKeyHoldingGarbageIsDeadLettered()
	r.aRunningJobIsCanceledOnceItsLeaseIsRenewed()
	r.aWorkflowRunsFailsAndIsRetried()
	handed := r.aJobRunningAtShutdownIsHandedBack(stopWorker)
	a := &app{t: t, env: map[string]string{"REDIS_URL": r.url, "BANANAS_NAMESPACE": r.ns, "LOG_LEVEL": "error", "WORKER_ROUTING_KEYS": "default,email,images"}}
	r.theCommandLineActsOnJobsAndPagesThem(a, dead, handed)
	r.theCommandLineRunsAWorkerAndEnqueues(a)

	if denied := aclDenials(t, r.admin); len(denied) > 0 {
		t.Fatalf("Redis refused the runtime under the documented user: %v", denied)
	}
}

// A workflow is submitted, advanced, failed by a step, retried, read and
// canceled: the workflow scripts and reads under the documented user.
func (r *aclRig) aWorkflowRunsFailsAndIsRetried() {
	t, ctx := r.t, r.ctx
	echo := testtasks.Echo.With(r.c)
	both := runtime.Gather(echo.Step(Msg{Text: "a"}), echo.Step(Msg{Text: "b"}))
	id, err := both.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.Await(ctx, id); err != nil || len(got) != 2 || got[1].Text != "b" {
		t.Fatalf("workflow Await = %+v, %v", got, err)
	}
	failing := runtime.Gather(testtasks.Note.With(r.c).Step(Msg{Text: "n"}))
	id, err = failing.Enqueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var we *runtime.WorkflowError
	if _, err := failing.Await(ctx, id); !errors.As(err, &we) {
		t.Fatalf("failing workflow Await = %v", err)
	}
	if n, err := r.c.RetryWorkflow(ctx, id); err != nil || n != 2 {
		t.Fatalf("RetryWorkflow = %d, %v", n, err)
	}
	if _, err := r.c.CancelWorkflow(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Workflow(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// aclRig is a Redis server with the documented user, a client connected as
// that user to database 1, and an admin client to each. Jobs of t_other say
// so on started, then run until canceled.
type aclRig struct {
	t          *testing.T
	ctx        context.Context
	admin, db1 *redis.Client
	url, ns    string
	c          *runtime.Client
	started    chan string
}

func newACLRig(t *testing.T) *aclRig {
	t.Helper()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ns := redistest.Namespace(t)
	createACLUser(t, admin, aclSetUser(t, "bananas-app", "app-pw", ns))
	// Database 1, so that the client SELECTs it.
	url := "redis://bananas-app:app-pw@" + srv.Addr() + "/1"
	db1 := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 1})
	t.Cleanup(func() { _ = db1.Close() })
	return &aclRig{t: t, ctx: ctxT(t), admin: admin, db1: db1, url: url, ns: ns,
		c: connect(t, url, runtime.WithNamespace(ns)), started: make(chan string, 4)}
}

// WaitForReplicas runs the enqueue script by EVALSHA, loads it when Redis
// does not have it, and WAITs; with no replica the job is stored but not
// replicated, which is not a refusal.
func (r *aclRig) enqueueWaitingForReplicasIsStoredNotRefused() {
	t, ctx := r.t, r.ctx
	if err := r.admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cw := connect(t, r.url, runtime.WithNamespace(r.ns), runtime.WaitForReplicas(1, 10*time.Millisecond))
	if _, err := testtasks.Echo.With(cw).Enqueue(ctx, Msg{Text: "replicated"}); !errors.Is(err, runtime.ErrNotReplicated) {
		t.Fatalf("Enqueue with WaitForReplicas and no replica = %v; want ErrNotReplicated", err)
	}
}

// startWorker runs a worker of the default route: t_echo answers its text,
// t_note always fails, t_other runs until canceled.
func (r *aclRig) startWorker() (stop func()) {
	w := runtime.NewWorker(r.c, fastOpts(runtime.WorkerOptions{Routes: []string{"default"}, ShutdownTimeout: 100 * time.Millisecond}))
	runtime.Handle(w, testtasks.Echo.With(r.c), func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	runtime.Handle(w, testtasks.Note.With(r.c), func(ctx context.Context, m Msg) (runtime.None, error) { return runtime.None{}, errors.New("always") })
	runtime.Handle(w, testtasks.Other.With(r.c), func(ctx context.Context, m Msg) (Reply, error) {
		r.started <- m.Text
		<-ctx.Done()
		return Reply{}, ctx.Err()
	})
	return startWorker(r.t, w)
}

// A second worker of the route finds its keeper lock held (keep.lua reads
// how long it has left), waits in the route's idle set, and stops (leaving
// it), so that the jobs below go to the first.
func (r *aclRig) aSecondWorkerStandsByForTheRoutesKeeper() {
	w := runtime.NewWorker(r.c, fastOpts(runtime.WorkerOptions{Routes: []string{"default"}, Concurrency: 1}))
	runtime.Handle(w, testtasks.Echo.With(r.c), func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	stop := startWorker(r.t, w)
	idle := runtime.QueueOf(r.c).Keys("default").Idle()
	waitFor(r.t, 10*time.Second, "both workers to wait", func() bool { return r.db1.ZCard(r.ctx, idle).Val() == 2 })
	stop()
	if n := r.db1.ZCard(r.ctx, idle).Val(); n != 1 {
		r.t.Fatalf("%d workers wait after the second stopped, want 1", n)
	}
}

// Producers: enqueue and await, delays, uniqueness, failures. It returns
// the id of the job that died.
func (r *aclRig) producersEnqueueAwaitDelayDedupeAndFail() (dead string) {
	t, ctx := r.t, r.ctx
	echo, note := testtasks.Echo.With(r.c), testtasks.Note.With(r.c)
	if got, err := echo.Call(ctx, Msg{Text: "acl"}); err != nil || got.Text != "acl" {
		t.Fatalf("Call = %+v, %v", got, err)
	}
	if got, err := echo.Call(ctx, Msg{Text: "later"}, runtime.Delay(100*time.Millisecond)); err != nil || got.Text != "later" {
		t.Fatalf("delayed Call = %+v, %v", got, err)
	}
	ids, err := echo.EnqueueMany(ctx, []Msg{{Text: "a"}, {Text: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := echo.Await(ctx, id); err != nil {
			t.Fatalf("Await %s: %v", id, err)
		}
	}
	// A keyed job waits in its flow (zrangebylex) and frees its slot.
	if got, err := echo.Call(ctx, Msg{Text: "keyed"}, runtime.Key("k")); err != nil || got.Text != "keyed" {
		t.Fatalf("keyed Call = %+v, %v", got, err)
	}
	// On a route no worker takes, so that the first is still waiting, and
	// holds its key, when the second comes.
	if _, err := echo.Enqueue(ctx, Msg{Text: "u"}, runtime.Unique(time.Minute), runtime.Route("unworked")); err != nil {
		t.Fatal(err)
	}
	if _, err := echo.Enqueue(ctx, Msg{Text: "u"}, runtime.Unique(time.Minute), runtime.Route("unworked")); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("second unique Enqueue = %v; want ErrDuplicate", err)
	}
	dead, err = note.Enqueue(ctx, Msg{}, runtime.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	var je *runtime.JobError
	if _, err := note.Await(ctx, dead); !errors.As(err, &je) {
		t.Fatalf("failing Await = %v; want a JobError", err)
	}
	return dead
}

// A job key that holds a string when its job falls due: set aside (RENAME)
// and dead-lettered.
func (r *aclRig) aJobKeyHoldingGarbageIsDeadLettered() {
	t, ctx, c := r.t, r.ctx, r.c
	garbled, err := testtasks.Echo.With(c).Enqueue(ctx, Msg{Text: "garbled"}, runtime.Delay(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.db1.Set(ctx, runtime.QueueOf(c).Keys("default").Job(garbled), "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the garbled job to be dead-lettered", func() bool {
		info, err := c.Job(ctx, garbled) // an error while the key holds garbage
		return err == nil && info.Status == runtime.StatusFailed
	})
}

// A running job canceled once its lease has been renewed (the renewal reads
// the cancel requests).
func (r *aclRig) aRunningJobIsCanceledOnceItsLeaseIsRenewed() {
	t, ctx, c := r.t, r.ctx, r.c
	running, err := testtasks.Other.With(c).Enqueue(ctx, Msg{Text: "cancel me"})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, r.started, 20*time.Second, "the job to cancel to start")
	info, err := c.Job(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the lease to be renewed", func() bool {
		now, err := c.Job(ctx, running)
		return err == nil && now.LeaseDeadline.After(info.LeaseDeadline)
	})
	if _, err := runtime.NewInspector(c).Cancel(ctx, running); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the running job to be canceled", func() bool { return jobStatus(t, c, running) == runtime.StatusCanceled })
}

// A job still running when the shutdown grace period ends: handed back.
func (r *aclRig) aJobRunningAtShutdownIsHandedBack(stopWorker func()) (handed string) {
	t := r.t
	handed, err := testtasks.Other.With(r.c).Enqueue(r.ctx, Msg{Text: "hand me back"})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, r.started, 20*time.Second, "the job to hand back to start")
	stopWorker()
	if s := jobStatus(t, r.c, handed); s != runtime.StatusPending {
		t.Fatalf("job running at shutdown is %s, want pending (handed back)", s)
	}
	return handed
}

// The command line: the dead-letter queue, cancel, pause and resume, a
// listing page by page, delete.
func (r *aclRig) theCommandLineActsOnJobsAndPagesThem(a *app, dead, handed string) {
	t := r.t
	if out := a.ok("dlq", "list"); !strings.Contains(out, dead) {
		t.Fatalf("dlq list does not show %s:\n%s", dead, out)
	}
	a.ok("dlq", "replay", dead)
	a.ok("job", "cancel", dead)
	a.ok("job", "cancel", handed)
	a.ok("dlq", "purge", "--yes")
	a.ok("pause", "default")
	a.ok("resume", "default")
	var later []string
	for range 2 {
		later = append(later, strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "x"}`, "--delay", "1h")))
	}
	out := a.ok("jobs", "--state", "scheduled", "--limit", "1")
	_, cursor, ok := strings.Cut(out, "more: --cursor ")
	if !ok {
		t.Fatalf("jobs --limit 1 of 2 scheduled has no next page:\n%s", out)
	}
	if out := a.ok("jobs", "--state", "scheduled", "--limit", "1", "--cursor", strings.TrimSpace(cursor)); !strings.Contains(out, later[1]) {
		t.Fatalf("second page of scheduled jobs lacks %s:\n%s", later[1], out)
	}
	for _, id := range later {
		a.ok("job", "delete", id)
	}
}

// The command line: a worker, enqueue and wait, the listings, cron.
func (r *aclRig) theCommandLineRunsAWorkerAndEnqueues(a *app) {
	t := r.t
	a.background("worker")
	if out := a.ok("enqueue", "count_words", `{"Body": "one two three"}`, "--wait"); strings.TrimSpace(out) != "3" {
		t.Fatalf("enqueue --wait printed %q, want 3", out)
	}
	id := strings.TrimSpace(a.ok("enqueue", "resize_image", `{"URL": "https://x/a.png", "Width": 10}`))
	waitFor(t, 20*time.Second, "the resize job to complete", func() bool { return a.status(id) == "completed" })
	a.ok("queues")
	a.ok("jobs", "--route", "default")
	a.ok("job", id)
	waitFor(t, 20*time.Second, "the worker's heartbeat", func() bool { return strings.Contains(a.ok("workers", "--json"), `"concurrency"`) })
	cronFires(t, a.env)
}

// A user that lacks a command the runtime sends gets Redis's NOPERM error,
// naming the command, from the call that sent it.
func TestACL_AMissingCommandIsNamedInTheError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ns := redistest.Namespace(t)
	for _, tc := range []struct {
		drop string
		call func(t *testing.T, url string) error
	}{
		{"time", func(t *testing.T, url string) error { return connectErr(t, url, runtime.WithNamespace(ns)) }},
		{"evalsha", func(t *testing.T, url string) error {
			_, err := testtasks.Echo.With(connect(t, url, runtime.WithNamespace(ns))).Enqueue(ctxT(t), Msg{Text: "x"})
			return err
		}},
		{"zrangebyscore", func(t *testing.T, url string) error {
			_, err := runtime.NewInspector(connect(t, url, runtime.WithNamespace(ns))).Workers(ctxT(t))
			return err
		}},
		{"subscribe", func(t *testing.T, url string) error {
			_, err := testtasks.Echo.With(connect(t, url, runtime.WithNamespace(ns))).Await(ctxT(t), "01M85PX5NEAJHF3VT4CWTZK1YD.default")
			return err
		}},
	} {
		t.Run("without "+tc.drop, func(t *testing.T) {
			user := "no-" + tc.drop
			createACLUser(t, admin, withoutGrant(t, aclSetUser(t, user, "pw", ns), "+"+tc.drop))
			err := tc.call(t, "redis://"+user+":pw@"+srv.Addr()+"/0")
			want := "no permissions to run the '" + tc.drop + "' command"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("without +%s: %v; want an error saying %q", tc.drop, err, want)
			}
		})
	}
}

// runsJobs runs a worker on routes and checks a job of each one comes back
// through Call: scripts, blocking fetches and the result's pub/sub all work.
func runsJobs(t *testing.T, c *runtime.Client, routes ...string) {
	t.Helper()
	task := testtasks.Echo.With(c)
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: routes}))
	runtime.Handle(w, task, func(ctx context.Context, m Msg) (Reply, error) { return Reply{Text: m.Text}, nil })
	stop := startWorker(t, w)
	defer stop()
	ctx := ctxT(t)
	for _, r := range routes {
		if got, err := task.Call(ctx, Msg{Text: r}, runtime.Route(r)); err != nil || got.Text != r {
			t.Fatalf("Call on route %s = %+v, %v", r, got, err)
		}
	}
}

// connectErr is Connect's error for url (nil: the connection is closed at
// the end of the test).
func connectErr(t *testing.T, url string, opts ...runtime.ConnectOption) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := runtime.Connect(ctx, url, opts...)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return err
}

// aclSetUser is the ACL SETUSER line of docs/OPERATIONS.md, split into
// arguments, for user with password and the key and channel patterns of ns.
func aclSetUser(t *testing.T, user, password, ns string) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "ACL SETUSER ") {
			continue
		}
		args := strings.Fields(line)
		replaced := 0
		for i, a := range args {
			switch a {
			case "bananas-app":
				args[i] = user
			case ">CHANGE-ME":
				args[i] = ">" + password
			case "~bananas:*":
				args[i] = "~" + ns + ":*"
			case "&bananas:*":
				args[i] = "&" + ns + ":*"
			default:
				continue
			}
			replaced++
		}
		if replaced != 4 {
			t.Fatalf("the ACL SETUSER line of docs/OPERATIONS.md lacks the user bananas-app, >CHANGE-ME, ~bananas:* or &bananas:*: %s", line)
		}
		return args
	}
	t.Fatal("docs/OPERATIONS.md has no line starting with ACL SETUSER")
	return nil
}

func withoutGrant(t *testing.T, args []string, drop string) []string {
	t.Helper()
	var out []string
	for _, a := range args {
		if a != drop {
			out = append(out, a)
		}
	}
	if len(out) == len(args) {
		t.Fatalf("the ACL SETUSER line has no %s", drop)
	}
	return out
}

// createACLUser runs an ACL SETUSER line and empties the ACL log, so that
// what the log holds afterwards is the runtime's.
func createACLUser(t *testing.T, admin *redis.Client, args []string) {
	t.Helper()
	ctx := ctxT(t)
	do := make([]any, len(args))
	for i, a := range args {
		do[i] = a
	}
	if err := admin.Do(ctx, do...).Err(); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if err := admin.ACLLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// aclDenials lists what Redis refused since the log was emptied, but the
// CONFIG GET of the eviction check (left out of the line on purpose) and
// go-redis's CLIENT SETINFO (Redis 7.2 and later; ignored when refused).
func aclDenials(t *testing.T, admin *redis.Client) []string {
	t.Helper()
	entries, err := admin.ACLLog(ctxT(t), 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Reason == "command" && (e.Object == "config|get" || e.Object == "client|setinfo") {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s (%s)", e.Reason, e.Context, e.Object, e.Username))
	}
	return out
}
