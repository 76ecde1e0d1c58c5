"""tasks.py: the Celery app of bench.py and its worker (`celery -A tasks worker`).

The broker is REDIS_URL; the Redis result backend (the same database) keeps
only echo's results, the one task whose caller waits for it: every other task
ignores its result, as fire-and-forget tasks do. A task notes its start in
memory, and a thread of each process that runs tasks writes the notes to Redis
every 10 ms in one pipeline (HSET bench:noops, RPUSH bench:ping /
bench:delayed), so that measuring adds no Redis round trip to a task.
"""
import os
import signal
import threading
import time

import redis
from celery import Celery

REDIS_URL = os.environ["REDIS_URL"]

app = Celery("bench", broker=REDIS_URL, backend=REDIS_URL)
app.conf.update(
    task_ignore_result=True,
    # kombu's pool of producer connections holds 10 by default, fewer than
    # the 16 producer threads; the Go harnesses give each producer two.
    broker_pool_limit=32,
    worker_hijack_root_logger=False,
)


def now_ms():
    return time.time() * 1000.0


class Notes:
    """A process's notes; its writer thread starts with the first note (a
    prefork child is forked without its parent's threads)."""

    def __init__(self):
        self.pid = None
        self.lock = threading.Lock()

    def _mine(self):
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    self.noops, self.first, self.last, self.lists = 0, None, None, {}
                    self.pid = os.getpid()
                    threading.Thread(target=self._write_loop, daemon=True).start()

    def noop(self):
        t = now_ms()
        self._mine()
        with self.lock:
            self.noops += 1
            if self.first is None:
                self.first = t
            self.last = t

    def since(self, kind, stamp_ms):
        d = now_ms() - stamp_ms
        self._mine()
        with self.lock:
            self.lists.setdefault(kind, []).append(d)

    def _write_loop(self):
        r = redis.Redis.from_url(REDIS_URL)
        pid = str(os.getpid())
        while True:
            time.sleep(0.01)
            with self.lock:
                noops, first, last, lists = self.noops, self.first, self.last, self.lists
                self.lists = {}
            try:
                p = r.pipeline(transaction=False)
                p.hset("bench:noops", pid, f"{noops} {first or ''} {last or ''}")
                for k, xs in lists.items():
                    p.rpush(f"bench:{k}", *xs)
                p.execute()
            except redis.RedisError as e:
                print(f"bench notes: {e}", flush=True)
                with self.lock:  # kept for the next pass
                    for k, xs in lists.items():
                        self.lists.setdefault(k, [])[:0] = xs


notes = Notes()


@app.task(name="noop")
def noop(payload):
    notes.noop()


@app.task(name="ping")
def ping(sent_ms):
    notes.since("ping", sent_ms)


@app.task(name="delayed")
def delayed(due_ms):
    notes.since("delayed", due_ms)


@app.task(name="echo", ignore_result=False)
def echo(x):
    return x


def _orphan_watch(parent):
    """Ends this worker, its pool with it, when bench.py is gone."""
    while True:
        time.sleep(1)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os.kill(os.getpid(), signal.SIGQUIT)
            time.sleep(10)
            os._exit(4)


if os.environ.get("BENCH_PARENT"):  # set for the worker only
    threading.Thread(target=_orphan_watch, args=(int(os.environ["BENCH_PARENT"]),), daemon=True).start()
