// Package metrics owns the Prometheus metrics of a Bananas client: their
// names, labels, help texts and buckets, the registry they live in (one per
// client, never the global default, so several clients and parallel tests in
// one process do not collide), the cache of labelled series that keeps the
// worker's per-job path free of label lookups, and the collector that reads
// queue depths when scraped.
//
// It must not know Redis, the queue's keys, jobs or workers: the runtime
// tells it what happened (a job enqueued, a run that succeeded, failed,
// retried...) and gives it functions to read what is only known at scrape
// time (running jobs, queue depths). Whatever those functions return, or
// however they fail, a scrape reports it and never panics.
package metrics
