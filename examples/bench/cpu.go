package main

import (
	"context"

	"github.com/bananas-go/bananas/internal/benchkit"
	"github.com/bananas-go/bananas/runtime"
)

// cpuPerJob returns a function that runs one scenario and reports what it
// cost in CPU per job: client_cpu_us_per_job_<name> (this process, which
// holds producers and worker alike: getrusage of itself and its ended
// children) and redis_cpu_us_per_job_<name> (the server's used_cpu_sys +
// used_cpu_user, from INFO cpu; 0 on the embedded server, which has no
// such section). The scheme is the peers' (bench/peers), so that the
// figures sit side by side.
func cpuPerJob(ctx context.Context, c *runtime.Client) func(name string, jobs int, scenario func()) {
	info := redisInfo(ctx, c)
	return func(name string, jobs int, scenario func()) {
		span := benchkit.StartCPU(info)
		scenario()
		clientUS, redisUS := span.PerJob(jobs)
		report("client_cpu_us_per_job_"+name, clientUS)
		report("redis_cpu_us_per_job_"+name, redisUS)
	}
}

// redisInfo returns a reader of the server's INFO cpu section, "" when it
// has none (the embedded server), for benchkit.StartCPU.
func redisInfo(ctx context.Context, c *runtime.Client) func() string {
	return func() string {
		s, err := c.Redis().Info(ctx, "cpu").Result()
		if err != nil {
			return ""
		}
		return s
	}
}
