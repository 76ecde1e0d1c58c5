package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bananas-go/bananas/internal/redistest"
	"github.com/bananas-go/bananas/queue"
	"github.com/bananas-go/bananas/runtime"
)

// From the overview to a route's limits page: the busy key shows at its cap
// with its jobs waiting; the form sets the route's limits, which are then in
// force in Redis, and an emptied field removes its limit.
func TestDashboard_SetARoutesLimitsAndSeeItsBusiestKey(t *testing.T) {
	t.Parallel()
	ctx := tab(t)
	c := connect(t, redistest.Shared(t).URL())
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{Routes: []string{"billing"}, Concurrency: 4}))
	runtime.Handle(w, capped, func(ctx context.Context, m Msg) (Reply, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Reply{}, nil
	})
	startWorker(t, w)
	for _, key := range []string{"customer-7", "customer-7", "customer-7", "customer-9"} {
		if _, err := capped.With(c).Enqueue(ctxT(t), Msg{}, runtime.Route("billing"), runtime.Key(key)); err != nil {
			t.Fatal(err)
		}
	}
	in := w.Inspector()
	waitFor(t, 20*time.Second, "both keys to run a job", func() bool {
		f, err := in.Flows(ctxT(t), "billing")
		return err == nil && f.Running == 2 && f.Waiting == 2
	})
	url := serveAPI(t, in, runtime.APIOptions{}).url

	run(t, ctx, "open the route's limits from the overview", chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#route-billing .limits-link`)), chromedp.Click(chromedp.CSS(`#route-billing .limits-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#busiest`)))
	if got := innerText(t, ctx, "#busiest tbody tr:first-child"); !strings.Contains(got, "customer-7") || !strings.Contains(got, "at its cap") || !strings.Contains(got, "2") {
		t.Fatalf("the busiest key's row = %q; want customer-7 at its cap with 2 waiting", got)
	}
	if got := text(t, ctx, `[data-limit=max_running]`); got != "none" {
		t.Fatalf("max running before the form = %q", got)
	}
	run(t, ctx, "set the route's limits", chromedp.SetValue(chromedp.CSS(`input[name=max_running]`), "20"),
		chromedp.SetValue(chromedp.CSS(`input[name=rate]`), "500/s"), chromedp.SetValue(chromedp.CSS(`input[name=burst]`), "50"),
		chromedp.Click(chromedp.CSS(`button[name=set]`)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	l, err := runtime.QueueOf(c).Flows.RouteLimits(ctxT(t), "billing")
	if err != nil || l.MaxRunning != 20 || l.Rate != 500 || l.Per != time.Second || l.Burst != 50 {
		t.Fatalf("limits in Redis after the form = %+v, %v", l, err)
	}
	if got := text(t, ctx, `[data-limit=rate]`); got != "500/s" {
		t.Fatalf("rate shown after the form = %q", got)
	}
	shoot(t, ctx, "limits")
	run(t, ctx, "empty the rate and the burst", chromedp.Clear(chromedp.CSS(`input[name=rate]`)),
		chromedp.Clear(chromedp.CSS(`input[name=burst]`)),
		chromedp.Click(chromedp.CSS(`button[name=set]`)))
	waitFor(t, 10*time.Second, "the form to remove the rate and its burst", func() bool {
		l, err := runtime.QueueOf(c).Flows.RouteLimits(ctxT(t), "billing")
		return err == nil && l == (queue.Limits{MaxRunning: 20})
	})
	run(t, ctx, "the page after the change", chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := text(t, ctx, `[data-limit=rate]`); got != "none" {
		t.Fatalf("rate shown after emptying it = %q", got)
	}
	if got := text(t, ctx, "h1"); got != "Limits and keys of route billing" {
		t.Errorf("heading = %q, want it to read \"Limits and keys of route billing\"", got)
	}
	// The rate emptied: its input shows its placeholder, which must fit.
	for _, size := range []struct {
		name string
		vp   chromedp.Action[chromedp.Void]
	}{{"390 px", phone()}, {"1280 px", chromedp.EmulateViewport(1280, 800)}} {
		run(t, ctx, "the page at "+size.name, size.vp, chromedp.WaitVisible(chromedp.CSS("#busiest")))
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](limitsLayout))
		if err != nil {
			t.Fatal(err)
		}
		if out != "" {
			t.Errorf("the limits page at %s: %s", size.name, out)
		}
	}
	shoot(t, ctx, "limits-emptied")

	// The route's own cap full (both keys run a job), a new key's job
	// waits: the page says the route's cap holds it.
	if err := runtime.QueueOf(c).Flows.SetRouteLimits(ctxT(t), "billing", queue.Limits{MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := capped.With(c).Enqueue(ctxT(t), Msg{}, runtime.Route("billing"), runtime.Key("customer-11")); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "reload the page", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#busiest`)))
	if got := innerText(t, ctx, "#busiest tbody tr:nth-child(3)"); !strings.Contains(got, "customer-11") || !strings.Contains(got, "the route's cap") {
		t.Fatalf("the new key's row = %q; want customer-11 held by the route's cap", got)
	}
}

// limitsLayout lists what is wrong with the limits page's layout at the
// screen's width: a form label away from its input (its text must sit
// right above it), a cell of the keys table off the screen, the page wider
// than the screen, the rate's placeholder cut, a header link marked
// current (the page is a route's, no section's).
const limitsLayout = `(() => {
	const out = [];
	const vw = document.documentElement.clientWidth;
	if (document.scrollingElement.scrollWidth > vw) out.push('the page is ' + document.scrollingElement.scrollWidth + ' px wide in ' + vw);
	for (const l of document.querySelectorAll('.limits-form label')) {
		const i = l.querySelector('input'), lr = l.getBoundingClientRect(), ir = i.getBoundingClientRect();
		if (Math.abs(ir.left - lr.left) > 2 || ir.top - lr.top < 8 || ir.top - lr.top > 40 || ir.right > vw) {
			out.push('label "' + l.textContent.trim() + '" is not right above its input');
		}
	}
	for (const c of document.querySelectorAll('#busiest td')) {
		const r = c.getBoundingClientRect();
		if (r.width > 0 && (r.left < 0 || r.right > vw)) out.push('cell "' + c.textContent.trim() + '" is off the screen');
	}
	const rate = document.querySelector('input[name=rate]'), cs = getComputedStyle(rate);
	const g = document.createElement('canvas').getContext('2d');
	g.font = cs.font;
	const room = rate.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
	if (rate.value === '' && g.measureText(rate.placeholder).width > room) out.push('the rate placeholder is cut: ' + Math.round(g.measureText(rate.placeholder).width) + ' px in ' + room);
	const cur = document.querySelector('nav [aria-current]');
	if (cur) out.push('the header marks "' + cur.textContent.trim() + '" current');
	return out.join('; ');
})()`
