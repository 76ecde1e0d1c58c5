GO ?= go

.PHONY: test test-faults demo bench bench-compare fmt

# The one test command (README, .ci/run): what the tests need installed
# (scripts/test-deps.sh), formatting, vet, and every test with the race
# detector against real redis-server processes the tests start.
test:
	@./scripts/test-deps.sh
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

# The network-fault load test: workers reach a real redis-server through a
# proxy that cuts their connections and then holds them silent past a lease
# (runtime/faults_test.go, internal/faultproxy). make test runs it too; this
# target runs it alone, -v printing its figures.
test-faults:
	$(GO) test -race -count=1 -timeout 5m -v -run '^TestWorker_EveryJobFinishesThroughCutsAndSilentHangs$$' ./runtime/

# The whole thing on the embedded Redis, no server needed.
demo:
	$(GO) run ./examples/quickstart

# Benchmarks against $$REDIS_URL (the embedded server when unset): the peer
# harness's scenarios, then the operator surface (-admin: HTTP submissions
# against the Go API, /metrics, queues and job-list pages at 1M pending jobs
# over 50 routes; the fill takes about 10 s on 2 cores). BENCH_ADMIN_FLAGS
# sizes it, e.g. BENCH_ADMIN_FLAGS='-depth 10000'.
BENCH_ADMIN_FLAGS ?=
bench:
	$(GO) run ./examples/bench
	$(GO) run ./examples/bench -admin $(BENCH_ADMIN_FLAGS)

# asynq and make bench side by side on one throwaway Redis; rewrites the
# table in docs/PERFORMANCE.md. BENCH_PEER is the shared peer harness.
BENCH_PEER ?= ../shared/bench
bench-compare:
	./examples/bench/compare-doc.sh $(BENCH_PEER)

fmt:
	gofmt -w $$(git ls-files '*.go')
