"""bench.py measures Celery (Redis broker) with the default scenarios and metric
names of the project's `go run ./examples/bench`, so that
scripts/bench-compare.sh can set them side by side on one redis-server:

    /usr/bin/python3 bench.py --url redis://127.0.0.1:6390/0          # threads pool, 64
    /usr/bin/python3 bench.py --url ... --pool prefork --concurrency 2

Every result line on stdout is `celery <metric>=<value>` (--label sets the first
word); notes go to stderr, prefixed with #. It FLUSHES the database it is given:
point it at a throwaway server. This process is the producers (apply_async from
16 threads); the tasks run in a worker started with Celery's CLI on tasks.py,
stopped by PID at the end. Celery has no batch enqueue (a group publishes one
message a task), so there is no enqueue_batch_* line.
"""
import argparse
import concurrent.futures
import datetime
import os
import resource
import signal
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--url", default="redis://127.0.0.1:6379/0", help="Redis URL of a throwaway server (its database is flushed)")
ap.add_argument("-n", type=int, default=50000, help="jobs for the enqueue and drain scenarios")
ap.add_argument("--producers", type=int, default=16, help="producer threads")
ap.add_argument("--pool", default="threads", help="the worker's pool: threads, prefork, ...")
ap.add_argument("--concurrency", type=int, default=64, help="the worker's concurrency")
ap.add_argument("--rate", type=int, default=1000, help="jobs per second in the latency scenario")
ap.add_argument("--secs", type=int, default=5, help="seconds of the latency scenario")
ap.add_argument("--calls", type=int, default=2000, help="sequential call round trips")
ap.add_argument("--delayed", type=int, default=200, help="jobs in the delayed-lateness scenario")
ap.add_argument("--label", default="celery", help="first word of the result lines")
opt = ap.parse_args()

os.environ["REDIS_URL"] = opt.url
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import celery  # noqa: E402
import kombu  # noqa: E402
import redis  # noqa: E402

import tasks  # noqa: E402

PAYLOAD = {"to": "user@example.com", "subject": "hello", "body": "0123456789012345678901234567890123456789"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def note(s):
    print(f"# {opt.label}: {s}", file=sys.stderr, flush=True)


def report(metric, v):
    print(f"{opt.label} {metric}={v:.3f}", flush=True)


def quantile(xs, q):
    """The q-quantile by the nearest rank below, as benchkit.Quantile; 0 for none."""
    if not xs:
        return 0.0
    return sorted(xs)[int(q * (len(xs) - 1))]


def parallel(threads, total, f):
    """Calls f(0) to f(total-1) from `threads` threads."""
    it = iter(range(total))
    lock = threading.Lock()

    def loop():
        while True:
            with lock:
                i = next(it, None)
            if i is None:
                return
            f(i)

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def wait_for(cond, secs):
    deadline = time.monotonic() + secs
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


admin = redis.Redis.from_url(opt.url)
admin.flushdb()
worker = None


def tree_cpu_us(root):
    """CPU of the live process root and its descendants from /proc (utime,
    stime, cutime, cstime), which getrusage does not count until they end."""
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            stats[int(d)] = (int(s[1]), sum(int(x) for x in s[11:15]))  # ppid, ticks
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo += [p for p, (pp, _) in stats.items() if pp == pid]
    return total / CLK_TCK * 1e6


def cpu_now():
    """(client, redis) CPU so far in µs: this process and its ended children
    (getrusage), the live worker, and the Redis server (INFO cpu)."""
    own = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN))) * 1e6
    live = tree_cpu_us(worker.pid) if worker else 0
    info = admin.info("cpu")
    return own + live, (info["used_cpu_sys"] + info["used_cpu_user"]) * 1e6


def cpu_report(name, jobs, since):
    c, r = cpu_now()
    report(f"client_cpu_us_per_job_{name}", (c - since[0]) / jobs)
    report(f"redis_cpu_us_per_job_{name}", (r - since[1]) / jobs)


def noops():
    """What the worker's processes last wrote: tasks run, the first and the
    last of their start times (ms)."""
    rows = [v.decode().split(" ") for v in admin.hgetall("bench:noops").values()]
    firsts = [float(r[1]) for r in rows if len(r) > 1 and r[1]]
    lasts = [float(r[2]) for r in rows if len(r) > 2 and r[2]]
    return sum(int(r[0]) for r in rows), min(firsts, default=None), max(lasts, default=None)


def stop_worker():
    if worker is None or worker.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGQUIT, 10), (signal.SIGKILL, None)):
        worker.send_signal(sig)  # warm shutdown, then cold (the pool too), then kill
        try:
            worker.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def scenarios():
    global worker
    n = opt.n
    tasks.noop.delay(PAYLOAD)  # connections open, the queue's binding declared
    admin.delete("celery")

    note(f"enqueue: {n} single apply_async calls from {opt.producers} threads")
    since = cpu_now()
    mem0 = int(admin.info("memory")["used_memory"])
    t0 = time.perf_counter()
    parallel(opt.producers, n, lambda i: tasks.noop.apply_async((PAYLOAD,)))
    report("enqueue_jobs_per_s", n / (time.perf_counter() - t0))
    report("redis_bytes_per_job", (int(admin.info("memory")["used_memory"]) - mem0) / n)
    cpu_report("enqueue", n, since)

    # drain: the worker on the n pending tasks. It imports for a few seconds
    # before its first task; throughput and CPU count from the first task this
    # process sees started (CPU over the tasks not yet seen then) to the last.
    note(f"drain: {n} pending tasks, one worker, --pool {opt.pool} --concurrency {opt.concurrency}")
    spawned = time.monotonic()
    log = open(os.environ.get("BENCH_LOG") or os.devnull, "ab")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool", opt.pool,
         "--concurrency", str(opt.concurrency), "--loglevel", "WARNING", "-Q", "celery"],
        cwd=here, env=dict(os.environ, BENCH_PARENT=str(os.getpid())),
        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    if not wait_for(lambda: noops()[0] > 0, 120):
        sys.exit("drain: no task started within 120 s (BENCH_LOG=FILE keeps the worker's output)")
    seen0 = noops()[0]
    since = cpu_now()
    note(f"drain: the first tasks seen started {time.monotonic() - spawned:.2f} s after the spawn ({seen0} by then)")
    if not wait_for(lambda: noops()[0] >= n, 600):
        sys.exit(f"drain: only {noops()[0]} of {n} tasks ran within 600 s")
    cpu_report("drain", n - seen0, since)
    _, first, last = noops()
    report("drain_jobs_per_s", (n - 1) / ((last - first) / 1000))

    note("enqueue_batch: not measured, Celery has no batch enqueue")

    # latency: apply_async at a fixed rate, each from a pool of `producers`
    # threads and stamped when it is made; latency = task start - that stamp.
    note(f"latency: {opt.rate} jobs/s for {opt.secs} s")
    since = cpu_now()
    failed = [0]

    def send():
        try:
            tasks.ping.apply_async((tasks.now_ms(),))
        except Exception:  # noqa: BLE001 -- counted, and the scenario goes on
            failed[0] += 1

    sent = 0
    with concurrent.futures.ThreadPoolExecutor(opt.producers) as ex:
        start = time.monotonic()
        while time.monotonic() - start < opt.secs:
            w = start + sent / opt.rate - time.monotonic()
            if w > 0:
                time.sleep(w)
            ex.submit(send)
            sent += 1
    if not wait_for(lambda: admin.llen("bench:ping") + failed[0] >= sent, 120):
        note(f"latency: {admin.llen('bench:ping')} of {sent} tasks started within 120 s")
    if failed[0]:
        note(f"latency: {failed[0]} apply_async calls failed")
    lat = [float(x) for x in admin.lrange("bench:ping", 0, -1)]
    report("latency_p50_ms", quantile(lat, 0.50))
    report("latency_p99_ms", quantile(lat, 0.99))
    cpu_report("latency", opt.rate * opt.secs, since)

    note(f"call: {opt.calls} sequential apply_async + AsyncResult.get round trips (Redis result backend)")
    tasks.echo.delay(-1).get(timeout=60)  # the result consumer subscribed
    since = cpu_now()
    rts = []
    for i in range(opt.calls):
        t0 = time.perf_counter()
        tasks.echo.delay(i).get(timeout=30)
        rts.append((time.perf_counter() - t0) * 1000)
    report("call_p50_ms", quantile(rts, 0.50))
    report("call_p99_ms", quantile(rts, 0.99))
    cpu_report("call", opt.calls, since)

    # delayed: tasks due in 1 s (eta, the due time; the worker holds ETA tasks
    # in memory until then); lateness = task start - due time.
    note(f"delayed: {opt.delayed} tasks due in 1 s")
    for _ in range(opt.delayed):
        due = tasks.now_ms() + 1000
        tasks.delayed.apply_async((due,), eta=datetime.datetime.fromtimestamp(due / 1000, datetime.timezone.utc))
    if not wait_for(lambda: admin.llen("bench:delayed") >= opt.delayed, 60):
        note(f"delayed: {admin.llen('bench:delayed')} of {opt.delayed} tasks started within 60 s")
    late = [float(x) for x in admin.lrange("bench:delayed", 0, -1)]
    report("delay_lateness_p50_ms", quantile(late, 0.50))
    report("delay_lateness_p99_ms", quantile(late, 0.99))


note(f"Celery {celery.__version__}, kombu {kombu.__version__}, redis-py {redis.__version__}, Python {sys.version.split()[0]}; "
     f"n={opt.n} producers={opt.producers} pool={opt.pool} concurrency={opt.concurrency} "
     f"broker_pool_limit={tasks.app.conf.broker_pool_limit} prefetch_multiplier={tasks.app.conf.worker_prefetch_multiplier}")
try:
    scenarios()
finally:
    stop_worker()
os._exit(0)  # kombu's and the result consumer's threads must not hold the exit up
