package server_test

import (
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLimits(t *testing.T) {
	ts := newTestServer(t, &server.Options{Conn: peer.Options{MaxBatch: 2, MaxInFlight: 1}})
	batch3 := `[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2},{"jsonrpc":"2.0","method":"add","params":[1,2],"id":3}]`
	tooMany := `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`

	// Over MaxBatch: one -32600 for the whole batch, over POST and WebSocket.
	status, body := post(t, ts.URL, "application/json", batch3, nil)
	if status != 200 {
		t.Fatalf("POST: %d", status)
	}
	testkit.JSONEqual(t, tooMany, body)
	ws := ts.dialRaw(t, nil)
	testkit.JSONEqual(t, tooMany, roundTrip(t, ws, batch3))
	if n := ts.srv.Stats().Limited["batch"]; n != 2 {
		t.Errorf("Stats().Limited[batch] = %d, want 2", n)
	}

	// Over MaxInFlight: the call is not refused; it waits for the running
	// one to finish (the server reads nothing meanwhile), then runs.
	write(t, ws, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":200},"id":"long"}`)
	write(t, ws, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"more"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"slept":200},"id":"long"}`, readReply(t, ws))
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":3,"id":"more"}`, readReply(t, ws))
}

func TestDiscover(t *testing.T) {
	ts := newTestServer(t, nil)
	_, body := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"rpc.discover","id":1}`, nil)
	for _, want := range []string{`"openrpc"`, `"subtract"`, `"sleep"`, `"callback"`} {
		if !strings.Contains(body, want) {
			t.Errorf("rpc.discover lacks %s: %.200s", want, body)
		}
	}
}

// TestLogging: one Info line when a peer connects and one when it leaves,
// with its id and address; nothing per message.
func TestLogging(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	ts := newTestServer(t, &server.Options{Logger: zap.New(core)})
	ws := ts.dialRaw(t, nil)
	for range 10 {
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`)
	}
	roundTrip(t, ws, `{"jsonrpc":"2.0","method":"nope","id":1}`)
	ws.Close(1000, "bye")
	if err := ts.srv.Shutdown(timeout(t)); err != nil {
		t.Fatal(err)
	}
	entries := logs.All()
	if len(entries) != 2 || entries[0].Message != "peer connected" || entries[1].Message != "peer disconnected" {
		t.Fatalf("logged %d lines: %v", len(entries), entries)
	}
	connected, left := entries[0].ContextMap(), entries[1].ContextMap()
	if connected["peer"] == "" || connected["peer"] != left["peer"] || connected["remote"] == "" {
		t.Fatalf("fields: %v / %v", connected, left)
	}
	if left["code"] != int64(1000) || left["reason"] != "bye" || left["duration"] == nil {
		t.Fatalf("disconnect fields: %v", left)
	}
}
