package cli

import (
	"strings"
	"testing"
)

func TestRouteShards_SetsThenPrintsTheCount(t *testing.T) {
	f := &fakeAdmin{}
	app := &fakeApp{admin: f}
	if out := wantRun(t, app, 0, "", "route", "shards", "hot", "12"); out != "route hot: 12 shard(s)\n" {
		t.Fatalf("route shards hot 12 printed %q", out)
	}
	if out := wantRun(t, app, 0, "", "route", "shards", "hot"); out != "route hot: 12 shard(s)\n" {
		t.Fatalf("route shards hot printed %q", out)
	}
	if out := wantRun(t, app, 0, "", "route", "shards", "hot", "--json"); out != "{\n  \"route\": \"hot\",\n  \"shards\": 12\n}\n" {
		t.Fatalf("route shards hot --json printed %q", out)
	}
	if got := strings.Join(f.acted, "; "); got != "set shards hot 12; shards hot; shards hot" {
		t.Fatalf("the admin layer was asked: %s", got)
	}
}

func TestRouteShards_ABadCountIsAnErrorNamingShardsAndTheRange(t *testing.T) {
	for _, n := range []string{"0", "257", "x"} {
		code, _, errOut := run(t, &fakeApp{admin: &fakeAdmin{}}, "route", "shards", "hot", n)
		if code == 0 || !strings.Contains(errOut, "shards") || !strings.Contains(errOut, "256") {
			t.Errorf("route shards hot %s: exit %d, stderr %q", n, code, errOut)
		}
	}
}
