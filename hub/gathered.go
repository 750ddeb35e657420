package hub

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file builds the answer of an rpc.call to several peers as their
// answers arrive (PROTOCOL.md section 8): each is encoded into the answer
// at once, or, when it would not fit within the hub's message size limit,
// dropped and counted. So the hub holds at most that limit of gathered
// results for one call, however many peers answer and however much:
// 2,000 peers answering 100 KB each made one 200 MB answer (and 1 GB of
// heap encoding it) before.

// gathered is the answer of an rpc.call to several peers under
// construction: {"results":[...]}, and when entries were left out,
// "truncated": true and "asked": the number of peers called; when nodes of
// the cluster did not say in time which peers they have (so theirs were
// not called), "incomplete": true and "unanswered": [their names]. Its
// methods are safe for concurrent use.
type gathered struct {
	mu         sync.Mutex
	b          []byte // `{"results":[` and the entries so far; never more than room
	room       int    // the bytes the answer may take, its tail included
	asked      int    // the peers called
	n          int    // entries in b
	left       int    // entries left out
	unanswered []byte // `,"incomplete":true,"unanswered":[...]`, or nothing
}

// gatheredTail is the longest ending of a gathered answer, beside the
// digits of "asked": it is kept free from the start, so that an entry
// taken in is never taken out again.
const gatheredTail = len(`],"truncated":true,"asked":}`)

// newGathered starts the answer for asked peers, to take at most max
// bytes, and to name the nodes that did not answer. It allocates only as
// the entries come.
func newGathered(asked, max int, unanswered []string) *gathered {
	g := &gathered{asked: asked}
	g.b = append(make([]byte, 0, 64), `{"results":[`...)
	if len(unanswered) > 0 {
		nodes, _ := jsonx.Marshal(unanswered) // strings only: it cannot fail
		g.unanswered = append([]byte(`,"incomplete":true,"unanswered":`), nodes...)
	}
	g.room = max - gatheredTail - len(strconv.Itoa(asked)) - len(g.unanswered)
	return g
}

// add takes in one peer's answer, as Forward or Route returned it: its
// raw result, or its error. What would not fit is dropped.
func (g *gathered) add(who PeerInfo, res json.RawMessage, err error) {
	peerJSON, _ := jsonx.Marshal(who) // strings only: it cannot fail
	key := `,"result":`
	value := []byte(res)
	switch {
	case errors.Is(err, ErrTooLarge): // another node's, not sent
		g.mu.Lock()
		g.left++
		g.mu.Unlock()
		return
	case err != nil:
		key = `,"error":`
		var merr error
		if value, merr = jsonx.Marshal(peer.ToError(err)); merr != nil { // data that is not JSON
			value = []byte(`{"code":-32603,"message":"Internal error: an answer that is not JSON"}`)
		}
	case res == nil:
		value = []byte("null")
	}
	size := 1 + len(`{"peer":`) + len(peerJSON) + len(key) + len(value) + 1 // with the comma before it
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.b)+size > g.room {
		g.left++
		return
	}
	g.grow(size)
	if g.n > 0 {
		g.b = append(g.b, ',')
	}
	g.b = append(g.b, `{"peer":`...)
	g.b = append(g.b, peerJSON...)
	g.b = append(g.b, key...)
	g.b = append(g.b, value...)
	g.b = append(g.b, '}')
	g.n++
}

// maxResult returns the largest result that could ever fit in the
// answer: what another node need not send when larger.
func (g *gathered) maxResult() int {
	return g.room - len(`{"results":[{"peer":{"id":""},"result":}`)
}

// grow makes room for n more bytes, doubling the buffer as append would
// but never beyond the answer's bound: an answer near the limit costs
// the limit, not twice it.
func (g *gathered) grow(n int) {
	need := len(g.b) + n
	if need <= cap(g.b) {
		return
	}
	limit := g.room + gatheredTail + len(strconv.Itoa(g.asked)) + len(g.unanswered)
	b := make([]byte, len(g.b), min(max(2*cap(g.b), need), limit))
	copy(b, g.b)
	g.b = b
}

// answer ends the answer and returns it. No add may follow.
func (g *gathered) answer() json.RawMessage {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.b = append(g.b, ']')
	if g.left > 0 {
		g.b = append(g.b, `,"truncated":true,"asked":`...)
		g.b = strconv.AppendInt(g.b, int64(g.asked), 10)
	}
	g.b = append(g.b, g.unanswered...)
	return append(g.b, '}')
}
