package routing_test

import (
	"encoding/json"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

func TestMain(m *testing.M) { hubproc.Main(m) }

// rpcCommand returns the path of the rpc command, built once.
func rpcCommand(t *testing.T) string {
	t.Helper()
	bin, err := hubproc.Command("rpc")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// message is the part of a message the tests look at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, s string) message {
	t.Helper()
	var m message
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("message %s: %v", s, err)
	}
	return m
}
