package runtime_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bananas-go/bananas/runtime"
	"github.com/bananas-go/bananas/runtime/internal/testtasks"
)

// An action refused for a job's state says so once and names the state the
// job is in as `job ID` shows it: a canceled job is "canceled", not
// "completed", in the CLI and the API alike.
func TestRefusal_CancelOfACanceledJobNamesItsStateOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	id := strings.TrimSpace(a.ok("enqueue", "count_words", `{"Body": "a"}`, "--delay", "1h"))
	a.ok("job", "cancel", id)
	for _, action := range []string{"cancel", "delete"} {
		code, _, errOut := a.run("job", action, id)
		want := "cannot " + action + " job " + id + ": it is canceled"
		if code != 1 || !strings.Contains(errOut, want) || strings.Count(errOut, "wrong state") != 1 || strings.Contains(errOut, "bananas:") {
			t.Fatalf("job %s of a canceled job = %d %q; want 1 and one line saying %q", action, code, errOut, want)
		}
	}
	if code, _, errOut := a.run("dlq", "replay", id); code != 1 || !strings.Contains(errOut, "cannot replay job "+id+": it is canceled") {
		t.Fatalf("dlq replay of a canceled job = %d %q; want 1 naming its state", code, errOut)
	}
	if code, _, errOut := a.run("job", "cancel", "nosuchjob"); code != 1 || strings.Count(errOut, "not found") != 1 || strings.Contains(errOut, "bananas:") {
		t.Fatalf("job cancel of an unknown id = %d %q; want 1 saying not found once", code, errOut)
	}
}

func TestAPI_RefusalNamesTheJobsStateOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		w := runtime.NewWorker(c, fastOpts(runtime.WorkerOptions{}))
		testtasks.Register(w)
		a := serveAPI(t, w.Inspector(), runtime.APIOptions{})
		id, err := testtasks.Echo.With(c).Enqueue(ctxT(t), testtasks.Msg{Text: "later"}, runtime.Delay(3600e9))
		if err != nil {
			t.Fatal(err)
		}
		a.want(http.StatusOK, "POST", "/api/v1/jobs/"+id+"/cancel", "")
		for _, req := range [][2]string{{"POST", "/api/v1/jobs/" + id + "/cancel"}, {"DELETE", "/api/v1/jobs/" + id}, {"POST", "/api/v1/dlq/" + id + "/replay"}} {
			msg, _ := a.want(http.StatusConflict, req[0], req[1], "")["error"].(string)
			if !strings.HasSuffix(msg, "it is canceled") || strings.Count(msg, "wrong state") != 1 {
				t.Fatalf("%s %s of a canceled job: error %q; want the wrong state said once, naming canceled", req[0], req[1], msg)
			}
		}
		msg, _ := a.want(http.StatusBadRequest, "GET", "/api/v1/jobs?cursor=nonsense&route=default", "")["error"].(string)
		if strings.Count(msg, "bad") != 1 {
			t.Fatalf("a bad cursor: error %q; want one prefix", msg)
		}
	})
}
