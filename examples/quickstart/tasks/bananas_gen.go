// Written by hand in the exact shape bananagen will generate (see docs/DESIGN-NOTES.md);
// it becomes generated code, with a DO NOT EDIT header, when bananagen lands.

package tasks

import (
	"context"
	"time"

	runtime "github.com/bananas-go/bananas/runtime"
)

// SendEmail enqueues sendEmail (route=email priority=high retries=2 timeout=10s).
var SendEmail = runtime.NewTask[EmailArgs, runtime.None]("send_email",
	runtime.Route("email"), runtime.WithPriority(runtime.PriorityHigh), runtime.MaxRetries(2), runtime.Timeout(10*time.Second))

// ResizeImage enqueues resizeImage (route=images).
var ResizeImage = runtime.NewTask[ResizeArgs, ResizeResult]("resize_image", runtime.Route("images"))

// CountWords enqueues countWords (priority=low).
var CountWords = runtime.NewTask[Text, int]("count_words", runtime.WithPriority(runtime.PriorityLow))

// Register registers every task of this package on w.
func Register(w *runtime.Worker) {
	runtime.Handle(w, SendEmail, func(ctx context.Context, a EmailArgs) (runtime.None, error) {
		return runtime.None{}, sendEmail(ctx, a)
	})
	runtime.Handle(w, ResizeImage, resizeImage)
	runtime.Handle(w, CountWords, countWords)
}
