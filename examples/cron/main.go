// Command cron runs cron entries with runtime.Main. On the embedded server:
//
//	REDIS_URL=mem:// WORKER_MODE=thin go run ./examples/cron
//
// Start it several times against one Redis and every tick still fires once:
//
//	REDIS_URL=redis://localhost:6379 go run ./examples/cron scheduler   # cron + promoter only
//	REDIS_URL=redis://localhost:6379 go run ./examples/cron worker      # and a worker to run the jobs
//	REDIS_URL=redis://localhost:6379 go run ./examples/cron cron list   # last_run, next_run, run_count, last_error
package main

import (
	"github.com/bananas-go/bananas/examples/cron/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func main() { runtime.Main(tasks.Register) }
