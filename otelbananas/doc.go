// Package otelbananas traces Bananas jobs with OpenTelemetry, by the
// messaging conventions: a PRODUCER span "send <route>" around each typed
// enqueue (one span for a batch, with messaging.batch.message_count), and a
// CONSUMER span "process <route>" around each run of a job. The W3C trace
// context and baggage travel in the job's headers, never in its args, so a
// job enqueued inside an HTTP handler's span is traced from that request
// through every run and retry: each run is a child of the enqueue's span
// and links to it.
//
// Install it with one call on the client and one middleware on the worker;
// generated code does not change:
//
//	otelbananas.Instrument(client)
//	w := runtime.NewWorker(client, runtime.WorkerOptions{
//		Middleware: []runtime.Middleware{otelbananas.Middleware()},
//	})
//
// It owns the mapping from Bananas's enqueues and runs to spans. It knows
// the runtime only through its public seams (runtime.EnqueueHook,
// runtime.Middleware, job headers) and nothing of Redis; it is a package of
// its own so that a program that does not import it links no OpenTelemetry.
package otelbananas
