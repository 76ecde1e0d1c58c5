GO ?= go

.PHONY: test demo bench fmt

# The one test command (README, .ci/run): formatting, vet, and every test with
# the race detector against real redis-server processes the tests start.
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

# The whole thing on the embedded Redis, no server needed.
demo:
	$(GO) run ./examples/quickstart

# Benchmarks against $$REDIS_URL (the embedded server when unset).
bench:
	$(GO) run ./examples/bench

fmt:
	gofmt -w $$(git ls-files '*.go')
