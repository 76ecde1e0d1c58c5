package api

import (
	"net/http"
	"testing"
)

func TestShards_PutSetsAndGetReadsTheRouteShardCount(t *testing.T) {
	f := &fakeAdmin{}
	h := newAPI(f, Config{})
	r := send(t, h, "PUT", "/api/v1/routes/hot/shards", `{"shards": 12}`)
	if r.status != http.StatusOK || r.raw != `{"route":"hot","shards":12}`+"\n" {
		t.Fatalf("PUT: answer %d %s", r.status, r.raw)
	}
	if f.route != "hot" || f.shards != 12 {
		t.Fatalf("the admin layer was asked route %q, %d shards", f.route, f.shards)
	}
	if r := send(t, h, "GET", "/api/v1/routes/hot/shards", ""); r.status != http.StatusOK || r.raw != `{"route":"hot","shards":12}`+"\n" {
		t.Fatalf("GET: answer %d %s", r.status, r.raw)
	}
	if r := send(t, newAPI(&fakeAdmin{}, Config{}), "GET", "/api/v1/routes/cold/shards", ""); r.raw != `{"route":"cold","shards":1}`+"\n" {
		t.Fatalf("GET of a route never sharded: answer %d %s", r.status, r.raw)
	}
}

func TestShards_PutOfABadCountIs400NamingShards(t *testing.T) {
	for _, b := range []string{`{"shards": 0}`, `{"shards": 257}`, `{"shards": "4"}`, `{"shards": 2.5}`, `{}`, `null`} {
		f := &fakeAdmin{}
		r := send(t, newAPI(f, Config{}), "PUT", "/api/v1/routes/hot/shards", b)
		r.refused(t, http.StatusBadRequest, "shards")
		if f.shards != 0 {
			t.Fatalf("%s: set %d shards", b, f.shards)
		}
	}
	send(t, newAPI(&fakeAdmin{}, Config{}), "PUT", "/api/v1/routes/hot/shards", `{"shards": 4, "n": 1}`).refused(t, http.StatusBadRequest, "n")
}
