"""bench-table.py RESULTS CONFIG...: the side-by-side table of bench-compare.sh.

RESULTS holds lines `<run> <config> <metric>=<value>`. Prints, as Markdown, each
metric's median per configuration with the ratios bananas/peer, then every
run's values. River's pg_bytes_per_job stands in the redis_bytes_per_job row.
"""
import statistics
import sys

PEERS = ("asynq", "asynq-fast", "river", "river-fast", "bananas-base")
ORDER = ("enqueue_jobs_per_s", "enqueue_batch_jobs_per_s", "redis_bytes_per_job",
         "drain_jobs_per_s", "latency_p50_ms", "latency_p99_ms", "call_p50_ms",
         "call_p99_ms", "delay_lateness_p50_ms", "delay_lateness_p99_ms")


def load(path):
    runs = {}  # (config, metric) -> [values in run order]
    for line in open(path):
        run, cfg, kv = line.split()
        metric, value = kv.split("=")
        if metric == "pg_bytes_per_job":
            metric = "redis_bytes_per_job"
        runs.setdefault((cfg, metric), []).append((int(run), float(value)))
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
    print("| metric | " + " | ".join(configs) + "".join(f" | bananas/{p}" for p in ratios) + " |")
    print("|---" * (1 + len(configs) + len(ratios)) + "|")
    for m in metrics:
        cells = [num(med.get((c, m))) for c in configs]
        for p in ratios:
            b, v = med.get(("bananas", m)), med.get((p, m))
            cells.append("n/a" if b is None or not v else ratio(b / v))
        print(f"| {m} | " + " | ".join(cells) + " |")
    print()
    print("Higher is better for `_per_s`, lower for `_ms` and bytes. n/a: the peer has no such API")
    print("(asynq: no batch enqueue, neither peer an enqueue-and-await call). River's bytes row is")
    print("`pg_bytes_per_job`: growth of `river_job` with its indexes per pending job.")
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
