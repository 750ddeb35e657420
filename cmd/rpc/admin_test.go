package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// adminHub is a test hub whose every caller may call the admin API.
func adminHub(t *testing.T) *hubtest.Hub {
	return hubtest.Start(t, &hubtest.Options{Server: server.Options{
		AuthorizeAdmin: func(context.Context, string) error { return nil },
	}})
}

func TestAdminCommands(t *testing.T) {
	h := adminHub(t)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := client.Dial(ctx, h.WS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events := make(chan client.Event, 4)
	if _, err := c.Subscribe(ctx, "news", func(e client.Event) { events <- e }); err != nil {
		t.Fatal(err)
	}

	r := rpc(t, "", "admin", "peers", "-all", h.HTTP())
	var p struct {
		ID     string
		Topics []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 0 || err != nil || len(p.Topics) != 1 || p.Topics[0] != "news" {
		t.Fatalf("admin peers -all: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	rpc(t, "", "admin", "peers", "-topic", "other.>", h.HTTP()).check(t, 0, `{"peers":[]}`+"\n")
	rpc(t, "", "admin", "topics", h.HTTP(), "news").check(t, 0, `{"topics":[{"topic":"news","subscribers":1,"history":0,"history_bytes":0,"published":0}]}`+"\n")
	if r := rpc(t, "", "admin", "broadcast", h.HTTP(), `{"n":1}`, "news", "other"); r.code != 0 || !strings.Contains(r.stdout, `{"topic":"news","delivered":1`) {
		t.Fatalf("admin broadcast: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if e := testkit.Recv(t, events, "the event on news"); string(e.Data) != `{"n":1}` {
		t.Fatalf("event %s", e.Data)
	}
	if r := rpc(t, "", "admin", "info", h.HTTP()); r.code != 0 || !strings.Contains(r.stdout, `"uptime_seconds"`) {
		t.Fatalf("admin info: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = rpc(t, "", "admin", "kick", "-peer", p.ID, "-code", "4005", "-reason", "bye", h.HTTP())
	if r.code != 0 || !strings.Contains(r.stdout, p.ID) {
		t.Fatalf("admin kick: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := rpc(t, "", "admin", "kick", h.HTTP()); r.code != exitUsage {
		t.Errorf("admin kick without -user or -peer: exit %d", r.code)
	}
	if r := rpc(t, "", "admin", "frobnicate", h.HTTP()); r.code != exitUsage {
		t.Errorf("admin frobnicate: exit %d", r.code)
	}
}

// Without the grant, the admin commands exit with status 1 and say why.
func TestAdminRefused(t *testing.T) {
	h := hubtest.Start(t, nil)
	r := rpc(t, "", "admin", "peers", h.HTTP())
	if r.code != exitRPCError || !strings.Contains(r.stderr, "error -32001") {
		t.Fatalf("admin peers without the grant: exit %d, stderr %q", r.code, r.stderr)
	}
}

// rpc admin refusals lists the last refusals: a bad token shows there.
func TestAdminRefusals(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{Server: server.Options{
		Authenticate:   server.TokenAuth(map[string]string{"ops-token": "ops"}),
		AuthorizeAdmin: func(context.Context, string) error { return nil },
	}})
	if r := rpc(t, "", "admin", "info", "-token", "wrong", h.HTTP()); r.code == 0 {
		t.Fatalf("admin info with a wrong token: exit 0, %q", r.stdout)
	}
	r := rpc(t, "", "admin", "refusals", "-all", "-token", "ops-token", h.HTTP())
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var first struct {
		Kind, Action, Target string
		Status               int
	}
	if r.code != 0 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &first) != nil ||
		first.Kind != "auth" || first.Action != "POST" || first.Target != "/rpc" || first.Status != 401 {
		t.Fatalf("admin refusals -all: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := rpc(t, "", "admin", "refusals", "-token", "ops-token", h.HTTP(), "extra"); r.code != exitUsage {
		t.Errorf("admin refusals with an argument: exit %d", r.code)
	}
}
