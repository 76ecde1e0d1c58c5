package runtime_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bananas-go/bananas/runtime"
)

// The schedule routes, each answering as the served document says: PUT
// makes a schedule whose ticks run the task with its args; GET lists it
// beside the program's cron entries (source code); pause, resume and
// DELETE act on it; bad input is a 400 naming the field, an unknown
// schedule a 404.
func TestAPI_Schedules(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *runtime.Client) {
		r := newSpecRig(t, c)
		put := `{"name":"t_echo","args":{"Text":"hi","N":3},"cron":"@every 1s","overlap":"allow","catch_up":"1m","tz":"Europe/Berlin"}`
		s := r.answerConforms(http.StatusOK, "PUT", "/api/v1/schedules/echo:hi", put)
		if s["id"] != "echo:hi" || s["source"] != "data" || s["cron"] != "@every 1s" || s["overlap"] != "allow" || s["catch_up_ms"] != float64(60000) {
			t.Fatalf("PUT answered %v", s)
		}
		if args, _ := s["args"].(map[string]any); args["Text"] != "hi" {
			t.Fatalf("PUT answered args %v", s["args"])
		}
		waitFor(t, 15*time.Second, "a tick's job to complete", func() bool {
			got := r.answerConforms(http.StatusOK, "GET", "/api/v1/schedules/echo:hi", "")
			id, _ := got["last_job"].(string)
			return id != "" && jobStatus(t, c, id) == runtime.StatusCompleted
		})
		if got := r.answerConforms(http.StatusOK, "GET", "/api/v1/schedules/echo:hi", ""); got["last_job_status"] == nil || got["unregistered"] != nil {
			t.Fatalf("GET answered %v; want its last job's status, and no unregistered mark", got)
		}
		list, _ := r.conforms(http.StatusOK, "GET", "/api/v1/schedules", "").([]any)
		sources := map[string]string{}
		for _, v := range list {
			m, _ := v.(map[string]any)
			sources[fmt.Sprint(m["id"])] = fmt.Sprint(m["source"])
		}
		if sources["echo:hi"] != "data" || sources["t_tick"] != "code" {
			t.Fatalf("listed %v; want echo:hi (data) and the cron entry t_tick (code)", sources)
		}
		run := r.answerConforms(http.StatusCreated, "POST", "/api/v1/schedules/echo:hi/run", "")
		if id, _ := run["id"].(string); id == "" {
			t.Fatalf("run answered %v", run)
		}
		from := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		rng := fmt.Sprintf(`{"from":%q,"to":%q}`, from.Format(time.RFC3339), from.Add(2500*time.Millisecond).Format(time.RFC3339Nano))
		bf := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/echo:hi/backfill", rng)
		if ids, _ := bf["ids"].([]any); len(ids) != 3 {
			t.Fatalf("backfill of 2.5s of an every-second schedule answered %v", bf)
		}
		if again := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/echo:hi/backfill", rng); len(again["ids"].([]any)) != 0 {
			t.Fatalf("backfill asked twice answered %v; want no ids", again)
		}
		if m := r.answerConforms(http.StatusBadRequest, "POST", "/api/v1/schedules/echo:hi/backfill", `{"from":"yesterday","to":"2026-01-01T00:00:00Z"}`); m["field"] != "from" {
			t.Fatalf("a bad from: %v", m)
		}
		if p := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/echo:hi/pause", ""); p["paused"] != true {
			t.Fatalf("pause answered %v", p)
		}
		if p := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/echo:hi/resume", ""); p["paused"] != false {
			t.Fatalf("resume answered %v", p)
		}
		for field, body := range map[string]string{
			"args":     `{"name":"t_echo","args":{"Text":5},"cron":"@every 1s"}`,
			"name":     `{"name":"no_such_task","args":{},"cron":"@every 1s"}`,
			"cron":     `{"name":"t_echo","args":{},"cron":"every so often"}`,
			"tz":       `{"name":"t_echo","args":{},"cron":"@every 1s","tz":"Mars/Base"}`,
			"overlap":  `{"name":"t_echo","args":{},"cron":"@every 1s","overlap":"queue_all"}`,
			"jitter":   `{"name":"t_echo","args":{},"cron":"@every 1s","jitter":"soon"}`,
			"paused":   `{"name":"t_echo","args":{},"cron":"@every 1s","paused":"yes"}`,
			"bogus":    `{"name":"t_echo","args":{},"cron":"@every 1s","bogus":1}`,
			"priority": `{"name":"t_echo","args":{},"cron":"@every 1s","priority":"urgent"}`,
		} {
			m := r.answerConforms(http.StatusBadRequest, "PUT", "/api/v1/schedules/bad", body)
			if m["field"] != field {
				t.Errorf("PUT %s: %v; want a 400 naming field %s", body, m, field)
			}
		}
		if m := r.answerConforms(http.StatusBadRequest, "PUT", "/api/v1/schedules/has%20space", put); !strings.Contains(fmt.Sprint(m["error"]), "id") {
			t.Fatalf("a bad id: %v", m)
		}
		// A cron entry of the code is listed, read, paused, resumed and run,
		// but is not changed or deleted here.
		if run := r.answerConforms(http.StatusCreated, "POST", "/api/v1/schedules/t_tick/run", ""); run["id"] == "" {
			t.Fatalf("run of a code entry answered %v", run)
		}
		if p := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/t_tick/pause", ""); p["paused"] != true || p["source"] != "code" {
			t.Fatalf("pause of a code entry answered %v", p)
		}
		if g := r.answerConforms(http.StatusOK, "GET", "/api/v1/schedules/t_tick", ""); g["paused"] != true || g["id"] != "t_tick" {
			t.Fatalf("GET of a paused code entry answered %v", g)
		}
		if p := r.answerConforms(http.StatusOK, "POST", "/api/v1/schedules/t_tick/resume", ""); p["paused"] != false {
			t.Fatalf("resume of a code entry answered %v", p)
		}
		for _, c := range [][2]string{{"PUT", "/api/v1/schedules/t_tick"}, {"DELETE", "/api/v1/schedules/t_tick"}} {
			body := ""
			if c[0] == "PUT" {
				body = put
			}
			if m := r.answerConforms(http.StatusConflict, c[0], c[1], body); !strings.Contains(fmt.Sprint(m["error"]), "bananas:cron") {
				t.Fatalf("%s %s: %v; want a 409 saying it is a cron entry of the code", c[0], c[1], m)
			}
		}
		r.answerConforms(http.StatusNotFound, "GET", "/api/v1/schedules/bad", "")
		r.answerConforms(http.StatusOK, "DELETE", "/api/v1/schedules/echo:hi", "")
		r.answerConforms(http.StatusNotFound, "DELETE", "/api/v1/schedules/echo:hi", "")
		r.answerConforms(http.StatusNotFound, "POST", "/api/v1/schedules/echo:hi/pause", "")
	})
}
