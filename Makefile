GO ?= go

.PHONY: test test-alerts lint test-faults test-chaos fuzz demo bench bench-compare bench-replica bench-history fmt

# The one test command (README, .ci/run): what the tests need installed
# (scripts/test-deps.sh), formatting, vet, staticcheck (make lint), the peer
# harnesses built and vetted (they are run only by make bench-compare), and
# every test with the race detector against real redis-server processes the
# tests start.
# The add-ons are modules of their own, so that the core module (the
# repository root) requires neither OpenTelemetry nor a PostgreSQL driver:
# otelbananas, history/postgres (with internal/e2e, the runtime's tests with
# that store), outbox (the transactional enqueue, its relay and their tests;
# both start PostgreSQL with the core's internal/pgtest), and
# the examples that use them. Each reaches this module, and the others,
# through a replace; ./... at the root skips them, so each is vetted, linted
# and tested here in turn, as fully as the core.
ADDONS := otelbananas history/postgres outbox examples/tracing examples/outbox examples/bench/addons
# The peer harnesses under bench/peers are modules of their own, so that asynq
# and River stay out of the library's go.mod. They drive their scenarios with
# internal/benchkit, as examples/bench does, through a replace of this module.
PEERS := bench/peers/asynq bench/peers/river
test: lint
	@./scripts/test-deps.sh
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory test-alerts
	@for m in $(ADDONS); do echo "$$m: go vet"; (cd $$m && $(GO) vet ./...) || exit 1; done
	@for p in $(PEERS); do echo "$$p: go build, go vet"; (cd $$p && $(GO) build -o /dev/null ./... && $(GO) vet ./...) || exit 1; done
	$(GO) test -race -count=1 -timeout 15m ./...
	@for m in $(ADDONS); do echo "$$m: go test -race"; (cd $$m && $(GO) test -race -count=1 -timeout 15m ./...) || exit 1; done

# The alert rules (deploy/prometheus/alerts.yml) checked and their tests run
# with promtool (Debian: the prometheus package). Where promtool is missing
# they are skipped with a message, except on CI (CI set), where .ci/run
# installs it and its absence is a failure.
test-alerts:
	@if command -v promtool >/dev/null; then \
		promtool check rules deploy/prometheus/alerts.yml && promtool test rules deploy/prometheus/alerts_test.yml; \
	elif [ -n "$$CI" ]; then echo "make test: promtool is missing on CI (.ci/run installs Debian's prometheus package)"; exit 1; \
	else echo "# alert rule tests skipped: promtool not installed (Debian: apt-get install prometheus)"; fi

# staticcheck at a pinned version, fetched into the module cache on first use
# (it is not a dependency of the module). A finding that is a test's intent
# carries a //lint:ignore with the reason.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) ./...
	@for p in $(ADDONS) $(PEERS); do echo "$$p: staticcheck"; (cd $$p && $(GO) run $(STATICCHECK) ./...) || exit 1; done

# The network-fault load test: workers and a producer reach a real
# redis-server through a proxy that cuts their connections, holds them silent
# past a lease, then slows them by 200 ms each way for 30 s
# (runtime/faults_test.go, internal/faultproxy). make test runs it too; this
# target runs it alone, -v printing its figures.
test-faults:
	$(GO) test -race -count=1 -timeout 5m -v -run '^TestWorker_EveryJobFinishesThroughCutsAndSilentHangs$$' ./runtime/

# The chaos run: three worker processes (one with its clock a minute ahead)
# and a producer behind a proxy to a Redis that persists every write, through
# worker SIGKILLs, cut and silent connections and Redis restarts, in a random
# order (BANANAS_CHAOS_SEED repeats one); about two and a half minutes. It prints the
# faults, jobs, duplicates, the longest wait and goroutines per worker.
# BANANAS_CHAOS_KEYED=1: keyed, capped jobs; BANANAS_CHAOS_WORKFLOW=1:
# workflows instead of jobs (docs/OPERATIONS.md).
test-chaos:
	BANANAS_CHAOS=1 $(GO) test -count=1 -timeout 10m -v -run '^TestChaos_' ./runtime/

# The whole thing on the embedded Redis, no server needed: the demo, then its
# dashboard, HTTP API and workers serving for 10 minutes (Ctrl-C ends it).
demo:
	$(GO) run ./examples/quickstart

# Benchmarks against $$REDIS_URL (the embedded server when unset): the peer
# harness's scenarios, then the operator surface (-admin: HTTP submissions
# against the Go API, /metrics, queues and job-list pages at 1M pending jobs
# over 50 routes; the fill takes about 10 s on 2 cores). BENCH_ADMIN_FLAGS
# sizes it, e.g. BENCH_ADMIN_FLAGS='-depth 10000'. Then, where redis-server is
# installed, what WaitForReplicas costs (bench-replica, below). On a cluster
# URL, -shards 12: each master's share of one route's commands, unsharded and
# over 12 shards. Flow control (-flow): a keyed drain at max_running=1
# against the unkeyed one, a rate held under competing workers, a late key
# behind a backlog (docs/FLOW-CONTROL.md). Workflows (-workflow): the added
# latency per step of a chain, a 1,000-way gather against the same jobs
# enqueued plainly, Redis bytes per stored step. Unique keys (-unique): single
# enqueues with a unique key against plain ones, in the same run. Batch
# handlers (-batched): the drain of a no-op task at batch=100 against the same
# task one job at a time, at concurrency 400, CPU per job. Sealed payloads
# (-seal): enqueue and drain with keys set and with 16 KiB compressible args
# against plain ones. Tracing (examples/bench/addons
# -tracing): a drain with otelbananas against without. Schedules
# (-schedules 10000): one scheduler firing 10,000 schedules that tick every
# second: ticks/s, tick lateness p50/p99, Redis CPU a second. The batched
# drain, unique enqueues, sealed payloads, schedules and durable waits (-waits) run on a real
# redis-server (scripts/bench-redis.sh: REDIS_URL, else a throwaway one), as
# their figures are Redis's own. Where PostgreSQL is
# installed, the task history (bench-history: the drain with it on against
# off, its lag, its searches over 1M rows), and the outbox (outbox's
# benchmarks: 100,000 committed rows drained into Redis, in jobs/s, and a
# job's commit-to-start latency while a worker waits, p50/p99).
BENCH_ADMIN_FLAGS ?=
# BENCH_IDLE: the counts of extra workers the idle-worker scenario runs with.
BENCH_IDLE ?= 0,100
bench:
	$(GO) run ./examples/bench
	$(GO) run ./examples/bench -admin $(BENCH_ADMIN_FLAGS)
	$(GO) run ./examples/bench -flow
	$(GO) run ./examples/bench -workflow
	./scripts/bench-redis.sh -batched
	./scripts/bench-redis.sh -unique
	./scripts/bench-redis.sh -waits
	./scripts/bench-redis.sh -seal -n 100000
	$(GO) -C examples/bench/addons run . -tracing -runs 9
	./scripts/bench-redis.sh -schedules 10000
	@if [ -n "$$REDIS_URL" ]; then $(GO) run ./examples/bench -idle $(BENCH_IDLE) -rate 2000 -secs 3; \
	else echo "# idle workers skipped: -idle needs REDIS_URL (each worker has its own client)"; fi
	@case "$$REDIS_URL" in *+cluster://*) $(GO) run ./examples/bench -shards 12 -n 20000;; \
	*) echo "# shard balance skipped: -shards needs a Redis Cluster (REDIS_URL=redis+cluster://...)";; esac
	@if command -v redis-server >/dev/null; then ./scripts/bench-replica.sh; \
	else echo "# bench-replica skipped: it needs redis-server for a master and its replica"; fi
	@if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then ./scripts/bench-history.sh; \
	else echo "# bench-history skipped: it needs PostgreSQL's initdb and postgres (Debian: apt-get install postgresql)"; fi
	@if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then $(GO) -C outbox test . -run '^$$' -bench . -benchtime 1x; \
	else echo "# outbox bench skipped: it needs PostgreSQL's initdb and postgres (Debian: apt-get install postgresql)"; fi

# The project's bench (default scenarios) against asynq and River, each at
# its defaults and polling fast (asynq 10 ms, River 1 ms), BullMQ (at its
# defaults and with removeOnComplete), Sidekiq and Celery, and against Redis
# with appendfsync everysec and always, on throwaway redis-server and
# PostgreSQL processes: medians of RUNS (3) runs in alternating order, N
# (50000) jobs a scenario, CPU per job per scenario (the client's and
# Redis's). Writes bench/peers/last-compare.txt and the table in
# docs/PERFORMANCE.md (COMPARE_DOC=0: not the doc). BASE=<git revision> adds
# the bench built from that revision (before/after a change, alternated as
# the peers are); CONFIGS names a subset. Needs this repository, redis-server
# and PostgreSQL; installs what the Node, Ruby and Python peers need when it
# is missing (scripts/bench-compare.sh). make test never needs them.
bench-compare:
	./scripts/bench-compare.sh

# What runtime.WaitForReplicas costs a single enqueue: a throwaway
# redis-server with a replica, the enqueue with and without it, medians of
# three alternating rounds.
bench-replica:
	./scripts/bench-replica.sh

# The task history against a throwaway PostgreSQL (and a throwaway
# redis-server unless REDIS_URL is set): drain with it on against off
# (alternating, medians of three), job end to row committed at 5,000
# jobs/s, and searches over 1M rows.
bench-history:
	./scripts/bench-history.sh

# Every fuzz target for FUZZTIME each (default 10s), one after the other;
# a failing input is written under the package's testdata/fuzz and becomes
# part of the seed corpus that make test runs.
fuzz:
	./scripts/fuzz.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
