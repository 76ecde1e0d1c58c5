package runtime

import (
	"context"
	"errors"
	"net/http"

	"github.com/bananas-go/bananas/runtime/internal/api"
)

// RunCron is POST /api/v1/cron/{name}/run (api.CronRunner): an unknown
// entry is a 404 naming the ones there are, a unique task whose key a job
// holds a 409.
func (b apiBackend) RunCron(ctx context.Context, name string) (string, error) {
	id, err := b.in.RunCron(ctx, name)
	switch {
	case errors.Is(err, ErrUnknownCron):
		return "", &api.Error{Status: http.StatusNotFound, Msg: trimBananas(err), Field: "name"}
	case errors.Is(err, ErrDuplicate):
		return "", &api.Error{Status: http.StatusConflict, Msg: trimBananas(err)}
	}
	return id, err
}
