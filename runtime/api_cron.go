package runtime

import "context"

// RunCron is POST /api/v1/cron/{name}/run: an unknown entry is a 404 naming
// the ones there are, a unique task whose key a job holds a 409.
func (b apiBackend) RunCron(ctx context.Context, name string) (string, error) {
	id, err := b.in.RunCron(ctx, name)
	return id, httpError(err)
}
