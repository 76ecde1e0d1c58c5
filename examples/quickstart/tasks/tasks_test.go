package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/bananastest"
	"github.com/bananas-go/bananas/examples/quickstart/tasks"
	"github.com/bananas-go/bananas/runtime"
)

func TestSendEmail_GoesToTheEmailRouteAtHighPriority(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	if _, err := tasks.SendEmail.With(h.Client).Enqueue(context.Background(), tasks.EmailArgs{To: "ana@example.com", Subject: "welcome"}); err != nil {
		t.Fatal(err)
	}
	job := bananastest.RequireEnqueued(t, h.Client, tasks.SendEmail, func(a tasks.EmailArgs) bool {
		return a.To == "ana@example.com" && a.Subject == "welcome"
	})
	if job.Route != "email" || job.Priority != runtime.PriorityHigh {
		t.Fatalf("send_email job on route %q at priority %q, want email at high (its annotation)", job.Route, job.Priority)
	}
	report := h.Drain(t)
	if report.Completed != 1 {
		t.Fatalf("report %s, want the email sent", report)
	}
	bananastest.RequireNotEnqueued(t, h.Client, tasks.SendEmail, nil)
}

func TestSendEmail_ToAnAddressWithoutAtDiesAfterTwoRetries(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	if _, err := tasks.SendEmail.With(h.Client).Enqueue(context.Background(), tasks.EmailArgs{To: "ana.example.com"}); err != nil {
		t.Fatal(err)
	}
	report := h.Drain(t)
	if report.Retried != 2 || report.Dead != 1 {
		t.Fatalf("report %s, want two retries (retries=2) then dead", report)
	}
	dead := bananastest.RequireDead(t, h.Client, tasks.SendEmail, func(a tasks.EmailArgs) bool { return a.To == "ana.example.com" })
	if dead.Attempts != 3 || !strings.Contains(dead.Error, `invalid recipient "ana.example.com": no @`) {
		t.Fatalf("dead job after %d attempts with error %q, want 3 and the handler's error", dead.Attempts, dead.Error)
	}
}

func TestResizeImage_ResultNamesTheResizedFileAndItsSize(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	ctx := context.Background()
	resize := tasks.ResizeImage.With(h.Client)
	id, err := resize.Enqueue(ctx, tasks.ResizeArgs{URL: "https://x/cat.png", Width: 640})
	if err != nil {
		t.Fatal(err)
	}
	bananastest.RequireEnqueued(t, h.Client, tasks.ResizeImage, func(a tasks.ResizeArgs) bool { return a.Width == 640 })
	h.Drain(t)
	res, err := resize.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := (tasks.ResizeResult{URL: "https://x/cat-640w.png", Bytes: 640 * 97}); res != want {
		t.Fatalf("result %+v, want %+v", res, want)
	}
}

func TestCountWords_CountsTheWordsOfEachText(t *testing.T) {
	h := bananastest.New(t, tasks.Register)
	ctx := context.Background()
	count := tasks.CountWords.With(h.Client)
	ids, err := count.EnqueueMany(ctx, []tasks.Text{{Body: "bananas are berries"}, {Body: ""}})
	if err != nil {
		t.Fatal(err)
	}
	jobs := bananastest.RequireEnqueuedN(t, h.Client, tasks.CountWords, 2, nil)
	if jobs[0].Priority != runtime.PriorityLow {
		t.Fatalf("count_words at priority %q, want low (its annotation)", jobs[0].Priority)
	}
	h.Drain(t)
	for i, want := range []int{3, 0} {
		if n, err := count.Await(ctx, ids[i]); err != nil || n != want {
			t.Errorf("job %d counted %d words (%v), want %d", i, n, err, want)
		}
	}
}
