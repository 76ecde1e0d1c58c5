package metrics

import "github.com/prometheus/client_golang/prometheus"

// Must returns the child of the job counter name (bananas_jobs_*_total) for
// route, priority and task, for testutil.ToFloat64.
func (s *Set) Must(name, route, priority, task string) prometheus.Collector {
	vec := map[string]*prometheus.CounterVec{
		"bananas_jobs_enqueued_total": s.enqueued, "bananas_jobs_processed_total": s.processed,
		"bananas_jobs_failed_total": s.failed, "bananas_jobs_retried_total": s.retried,
		"bananas_jobs_dead_total": s.dead, "bananas_jobs_canceled_total": s.canceled,
		"bananas_jobs_snoozed_total": s.snoozed,
	}[name]
	if vec == nil {
		panic("no job counter " + name)
	}
	return vec.WithLabelValues(route, priority, task)
}
