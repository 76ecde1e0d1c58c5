package main

import "github.com/bananas-go/bananas/internal/benchkit"

// cpuPerJob runs one scenario and reports this process's CPU per job,
// client_cpu_us_per_job_<name>, as the project's bench does. There is no
// Redis, and PostgreSQL's CPU is not measured: no redis_cpu_* line.
func cpuPerJob(name string, jobs int, scenario func()) {
	span := benchkit.StartCPU(func() string { return "" })
	scenario()
	clientUS, _ := span.PerJob(jobs)
	report("client_cpu_us_per_job_"+name, clientUS)
}
