package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/benchkit"
)

// cpuPerJob returns a function that runs one scenario and reports its CPU
// per job as the project's bench does: client_cpu_us_per_job_<name> (this
// process, producers and server alike) and redis_cpu_us_per_job_<name>
// (INFO cpu's used_cpu_sys + used_cpu_user).
func cpuPerJob(ctx context.Context, rc *redis.Client) func(name string, jobs int, scenario func()) {
	info := func() string { s, _ := rc.Info(ctx, "cpu").Result(); return s }
	return func(name string, jobs int, scenario func()) {
		span := benchkit.StartCPU(info)
		scenario()
		clientUS, redisUS := span.PerJob(jobs)
		report("client_cpu_us_per_job_"+name, clientUS)
		report("redis_cpu_us_per_job_"+name, redisUS)
	}
}
