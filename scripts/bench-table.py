"""bench-table.py RESULTS CONFIG...: the side-by-side table of bench-compare.sh.

RESULTS holds lines `<run> <config> <metric>=<value>`. Prints, as Markdown, each
metric's median per configuration, the ratios bananas/peer of those medians, then
every run's values. River's pg_bytes_per_job stands in the redis_bytes_per_job
row; BullMQ's removeOnComplete drain (bullmq-lean) stands in the
drain_lean_jobs_per_s row, beside Bananas' drain of a task that keeps nothing
(result_ttl=0). The CPU rows gain `_life`, a job's whole life: enqueue + drain, summed in
each run before the median is taken.
"""
import statistics
import sys

PEERS = ("asynq", "asynq-fast", "river", "river-fast", "bullmq", "bullmq-lean", "sidekiq",
         "celery", "bananas-base")
CPU_SCENARIOS = ("life", "enqueue", "drain", "batch", "latency", "call")
ORDER = ("enqueue_jobs_per_s", "enqueue_batch_jobs_per_s", "redis_bytes_per_job",
         "drain_jobs_per_s", "drain_lean_jobs_per_s", "latency_p50_ms", "latency_p99_ms", "call_p50_ms",
         "call_p99_ms", "delay_lateness_p50_ms", "delay_lateness_p99_ms",
         "gather_1000_ms", "gather_plain_1000_ms", "gather_vs_plain") + tuple(
    f"{who}_cpu_us_per_job_{s}" for who in ("redis", "client") for s in CPU_SCENARIOS)


def load(path):
    runs = {}  # (config, metric) -> [values in run order]
    for line in open(path):
        run, cfg, kv = line.split()
        metric, value = kv.split("=")
        if metric == "pg_bytes_per_job":
            metric = "redis_bytes_per_job"
        if cfg == "bullmq-lean" and metric == "drain_jobs_per_s":
            runs.setdefault((cfg, "drain_lean_jobs_per_s"), []).append((int(run), float(value)))
        runs.setdefault((cfg, metric), []).append((int(run), float(value)))
    for who in ("redis", "client"):
        for cfg in {c for c, _ in runs}:
            enq = dict(runs.get((cfg, f"{who}_cpu_us_per_job_enqueue"), []))
            drain = dict(runs.get((cfg, f"{who}_cpu_us_per_job_drain"), []))
            life = [(r, enq[r] + drain[r]) for r in enq if r in drain]
            if life:
                runs[(cfg, f"{who}_cpu_us_per_job_life")] = life
    return {k: [v for _, v in sorted(vs)] for k, vs in runs.items()}


def num(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def ratio(r):
    return f"{r:.2f}×" if abs(r) >= 0.1 else f"{r:.2g}×"


def main():
    runs = load(sys.argv[1])
    configs = sys.argv[2:]
    metrics = [m for m in ORDER if any((c, m) in runs for c in configs)]
    metrics += sorted({m for _, m in runs} - set(metrics))
    med = {k: statistics.median(v) for k, v in runs.items()}
    peers = [p for p in PEERS if p in configs]
    ratios = peers if "bananas" in configs else []
    print("Medians:")
    print()
    print("| metric | " + " | ".join(configs) + " |")
    print("|---" * (1 + len(configs)) + "|")
    for m in metrics:
        print(f"| {m} | " + " | ".join(num(med.get((c, m))) for c in configs) + " |")
    print()
    print("Higher is better for `_per_s`; lower for `_ms`, bytes and CPU. n/a: the harness has no")
    print("such API or measure (no batch enqueue: asynq, Celery; no enqueue-and-await call: asynq,")
    print("River, Sidekiq; a gather: only Bananas and BullMQ; no Redis: River). River's bytes row")
    print("is `pg_bytes_per_job`: growth of `river_job` with its indexes per pending job.")
    print("`*_cpu_us_per_job_<scenario>`: CPU µs per job over the scenario, of the Redis server")
    print("(`redis_`) and of the harness's processes, producers and workers (`client_`); `_life` is")
    print("enqueue + drain, a job's whole life (enqueue, fetch, ack, record).")
    print()
    if ratios:
        print("Ratios bananas/peer of the medians (above 1 is better for Bananas in `_per_s` rows,")
        print("below 1 in the others):")
        print()
        print("| metric | " + " | ".join(f"bananas/{p}" for p in ratios) + " |")
        print("|---" * (1 + len(ratios)) + "|")
        for m in metrics:
            cells = []
            for p in ratios:
                b, v = med.get(("bananas", m)), med.get((p, m))
                cells.append("n/a" if b is None or not v else ratio(b / v))
            print(f"| {m} | " + " | ".join(cells) + " |")
        print()
    print("Each run's values, run 1 / run 2 / …:")
    print()
    print("| metric | " + " | ".join(configs) + " |")
    print("|---" * (1 + len(configs)) + "|")
    for m in metrics:
        cells = [" / ".join(num(v) for v in runs.get((c, m), [])) or "n/a" for c in configs]
        print(f"| {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
