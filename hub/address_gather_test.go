package hub_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// gatheredAnswer is the result of an rpc.call to several peers, with the
// fields of a truncated one.
type gatheredAnswer struct {
	Results []struct {
		Peer   hub.PeerInfo
		Result json.RawMessage
		Error  *peer.Error
	}
	Truncated *bool `json:"truncated"`
	Asked     *int  `json:"asked"`
}

// callRaw sends an rpc.call of a topic over a raw WebSocket that reads no
// message over limit bytes, and returns the reply's size and result.
func callRaw(t *testing.T, rh *routeHub, limit int, id, topic, method string) (int, gatheredAnswer) {
	t.Helper()
	ws := rh.raw(t)
	ws.SetReadLimit(int64(limit)) // an answer over the limit fails here
	req := `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"` + topic + `","method":"` + method + `"},"id":` + id + `}`
	if err := ws.Write(ctx(t), websocket.MessageText, []byte(req)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.Read(ctx(t))
	if err != nil {
		t.Fatalf("reading the answer (limit %d): %v", limit, err)
	}
	var reply struct {
		ID     json.RawMessage
		Result gatheredAnswer
		Error  *peer.Error
	}
	if err := json.Unmarshal(msg, &reply); err != nil || reply.Error != nil || string(reply.ID) != id {
		t.Fatalf("reply %.200s: %v", msg, err)
	}
	return len(msg), reply.Result
}

// A call of a topic whose peers' answers together exceed the hub's
// message size limit: the answer stays within it, whole entries only,
// with "truncated": true and "asked"; an answer that fits has neither.
// Big errors count as results do.
func TestAddressTopicTruncated(t *testing.T) {
	const (
		limit = 64 << 10
		peers = 40
		size  = 8 << 10 // 40 x 8 KiB: five times the limit
	)
	rh := startHub(t, &hub.Options{MaxMessage: limit})
	big := `"` + strings.Repeat("x", size) + `"`
	for i := range peers {
		m := peer.NewMux()
		m.HandleFunc("big", func(context.Context, *peer.Request) (any, error) {
			if i%4 == 0 {
				return nil, &peer.Error{Code: 4000, Message: "no", Data: json.RawMessage(big)}
			}
			return json.RawMessage(big), nil
		})
		m.HandleFunc("small", func(context.Context, *peer.Request) (any, error) { return i, nil })
		c := rh.dial(t, m)
		if err := c.Call(ctx(t), "rpc.subscribe", []string{"room.big"}, nil); err != nil {
			t.Fatal(err)
		}
	}

	// A long id leaves less room: the reply, envelope and all, fits.
	for _, id := range []string{"1", `"` + strings.Repeat("i", 2000) + `"`} {
		n, got := callRaw(t, rh, limit, id, "room.big", "big")
		if n > limit {
			t.Fatalf("id of %d bytes: the reply is %d bytes, over the limit %d", len(id), n, limit)
		}
		if got.Truncated == nil || !*got.Truncated || got.Asked == nil || *got.Asked != peers {
			t.Fatalf("id of %d bytes: truncated %v, asked %v; want true, %d", len(id), got.Truncated, got.Asked, peers)
		}
		if len(got.Results) == 0 || len(got.Results) >= peers {
			t.Fatalf("id of %d bytes: %d entries of %d", len(id), len(got.Results), peers)
		}
		// As many as fit: one more would not have.
		if entry := size + 200; n+entry <= limit {
			t.Fatalf("id of %d bytes: %d entries in %d bytes, room for more", len(id), len(got.Results), n)
		}
		for _, r := range got.Results {
			switch {
			case r.Peer.ID == "":
				t.Fatalf("an entry without its peer")
			case r.Error != nil && (r.Error.Code != 4000 || string(r.Error.Data) != big):
				t.Fatalf("error entry %d %s, data of %d bytes", r.Error.Code, r.Error.Message, len(r.Error.Data))
			case r.Error == nil && string(r.Result) != big:
				t.Fatalf("result of %d bytes, want %d", len(r.Result), len(big))
			}
		}
	}

	_, got := callRaw(t, rh, limit, "2", "room.big", "small")
	if len(got.Results) != peers || got.Truncated != nil || got.Asked != nil {
		t.Fatalf("an answer that fits: %d entries, truncated %v, asked %v", len(got.Results), got.Truncated, got.Asked)
	}
}
