package runtime

import "context"

// RunNow moves scheduled job id (delayed, or waiting for its retry) to its
// ready list now, its attempts as they were; a pending job is left as it
// is. Any other state is an error matching ErrWrongState, an unknown id
// ErrJobNotFound.
func (in *Inspector) RunNow(ctx context.Context, id string) error {
	return in.refusal(ctx, "run", id, in.c.q.RunNow(ctx, id))
}
