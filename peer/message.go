package peer

import (
	"encoding/json"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ID is a request id as it appeared on the wire: the raw JSON text of a
// string, a number or null. Keeping the text, rather than a decoded value,
// echoes every id byte for byte, including numbers beyond 64 bits.
// The zero ID is no id at all: the request is a notification.
type ID struct{ raw string }

// IsZero reports whether there is no id (a notification).
func (id ID) IsZero() bool { return id.raw == "" }

// String returns the id's JSON text, or "" for no id.
func (id ID) String() string { return id.raw }

// MarshalJSON returns the id's JSON text; no id encodes as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON keeps the JSON text of a string, number or null id.
func (id *ID) UnmarshalJSON(b []byte) error {
	if !validID(b) {
		return errInvalidRequest()
	}
	id.raw = string(b)
	return nil
}

// validID reports whether b is a string, a number or null.
func validID(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c == '"', c == 'n', c == '-', isDigit(c):
		return skipValue(b, 0, 0) == len(b)
	}
	return false
}

// isIDValue reports whether the JSON value v, valid already (scanned, or
// decoded by encoding/json), is a string, a number or null: its first
// byte tells.
func isIDValue(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	c := v[0]
	return c == '"' || c == 'n' || c == '-' || isDigit(c)
}

// Request is one call or notification, as a handler sees it. Params is the
// raw JSON array or object (nil when omitted); the handler, or [Func],
// decodes it. Params is a part of the message read, which is not reused:
// a handler may keep it. Its capacity is its length, so that appending to
// it copies it rather than writing over the rest of the message.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage
}

// IsNotification reports whether the request has no id and so gets no reply.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// message is one decoded JSON-RPC object. Its byte slices point into the
// frame it was read from.
type message struct {
	version bool // "jsonrpc": "2.0" present and right
	method  []byte
	params  []byte
	id      []byte
	result  []byte
	err     []byte
	hasID   bool
	// idText is id as a string, when the batch the message is in gave
	// it one (see batchIDs).
	idText string
	// bad is set when a member has the wrong type. The message is then
	// an invalid request (or response).
	bad bool
}

// isResponse reports whether m looks like a response: it has a result or an
// error and no method. Responses are never answered, even when invalid, so
// two peers cannot bounce errors off each other forever.
func (m *message) isResponse() bool {
	return m.method == nil && (m.result != nil || m.err != nil)
}

// validRequest reports whether m is a well-formed request or notification.
func (m *message) validRequest() bool {
	return m.version && !m.bad && m.method != nil && m.result == nil && m.err == nil
}

// replyID is the id to answer an invalid message with: its own, when that is
// a valid id, else null.
func (m *message) replyID() []byte {
	if m.hasID && isIDValue(m.id) {
		return m.id
	}
	return nullJSON
}

var nullJSON = []byte("null")

// parseObject decodes the object starting at b[i], inside depth arrays,
// and returns the index just past it, or a negative number as scanValue
// does.
func parseObject(b []byte, i, depth, limit int, m *message) int {
	return scanObject(b, i, depth, limit, m)
}

// member records one member, named name; later duplicates win, as with
// encoding/json.
func (m *message) member(name, v []byte) {
	switch string(name) {
	case "jsonrpc":
		m.version = string(v) == `"2.0"`
	case "method":
		if v[0] != '"' {
			m.bad = true
		}
		m.method = v
	case "params":
		if v[0] != '[' && v[0] != '{' {
			m.bad = true
		}
		// Params and results go to code of others, which may append to
		// them: capped, they cannot grow over the rest of the frame, a
		// batch's next elements.
		m.params = v[:len(v):len(v)]
	case "id":
		m.hasID = true
		m.id = v
		if !isIDValue(v) {
			m.bad = true
		}
	case "result":
		m.result = v[:len(v):len(v)] // as params

	case "error":
		m.err = v
	}
}

// frame is a decoded WebSocket message or HTTP body: one message, or the
// elements of a batch.
type frame struct {
	batch bool
	// msgs holds the decoded elements. An element that is valid JSON but not
	// an object is left zero, which makes it an invalid request.
	msgs []message
	// tooBig is set when a batch has more elements than allowed; msgs then
	// holds only the first ones.
	tooBig bool
	// tooDeep is set, with ok false, when the input nests deeper than
	// allowed; it is not scanned further.
	tooDeep bool
}

// parseFrame decodes b, keeping at most maxBatch elements of a batch (the
// rest is only validated, so a hostile batch costs no memory) and
// scanning at most maxDepth levels of nesting. ok is false when b is not
// valid JSON, including when it is not valid UTF-8, which JSON text must
// be (RFC 8259) and which WebSocket text frames carry, and when it nests
// too deep (f.tooDeep). The messages are decoded into buf's array when it
// has room (a reader reuses one from frame to frame); buf may be nil.
func parseFrame(buf []message, b []byte, maxBatch, maxDepth int) (f frame, ok bool) {
	f.msgs = buf[:0]
	if !utf8.Valid(b) {
		return f, false
	}
	i := skipSpace(b, 0)
	if i >= len(b) {
		return f, false
	}
	switch b[i] {
	case '{':
		f.msgs = append(f.msgs, message{})
		i = parseObject(b, i, 0, maxDepth, &f.msgs[0])
	case '[':
		f.batch = true
		if maxDepth < 1 {
			i = tooDeep
			break
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			i++
			break
		}
		var scratch message
		for {
			m := &scratch
			if len(f.msgs) < maxBatch {
				f.msgs = append(f.msgs, message{})
				m = &f.msgs[len(f.msgs)-1]
			} else {
				f.tooBig = true
			}
			if i < len(b) && b[i] == '{' {
				i = parseObject(b, i, 1, maxDepth, m)
			} else {
				i = scanValue(b, i, 1, maxDepth)
			}
			if i < 0 {
				break
			}
			var end bool
			if i, end = nextElem(b, i, ']'); end {
				break
			}
		}
	default:
		// Valid JSON that is neither an object nor an array is an
		// invalid request, not a parse error.
		f.msgs = append(f.msgs, message{})
		i = scanValue(b, i, 0, maxDepth)
	}
	if i < 0 || skipSpace(b, i) != len(b) {
		f.tooDeep = i == tooDeep
		return f, false
	}
	return f, true
}

// Encoding. Messages are built by appending to a byte slice; only params and
// results go through encoding/json.

func appendResult(dst, id, result []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, len(id)+len(result)+len(`{"jsonrpc":"2.0","id":,"result":}`))
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

func appendError(dst, id []byte, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if len(e.Data) > 0 && validJSON(e.Data) {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, "}}"...)
}

// appendRequest appends a call (id != nil) or a notification.
func appendRequest(dst, id []byte, method string, params []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, len(id)+len(method)+len(params)+len(`{"jsonrpc":"2.0","id":,"method":"","params":}`))
	}
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = appendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// marshalParams encodes params, which must become a JSON array or object
// (or be nil, to omit them).
func marshalParams(params any) ([]byte, error) {
	var b []byte
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = p
	default:
		var err error
		if b, err = jsonx.Marshal(p); err != nil {
			return nil, err
		}
	}
	i := skipSpace(b, 0)
	if i >= len(b) || (b[i] != '[' && b[i] != '{') || !validJSON(b) {
		return nil, errParamsType
	}
	return b, nil
}

var errParamsType = &Error{Code: CodeInvalidParams, Message: "params must be a JSON array or object"}

// marshalResult encodes a handler's result; nil becomes null.
func marshalResult(v any) ([]byte, error) {
	switch r := v.(type) {
	case nil:
		return nullJSON, nil
	case json.RawMessage:
		return marshalRaw(r)
	case int:
		return strconv.AppendInt(nil, int64(r), 10), nil
	case int64:
		return strconv.AppendInt(nil, r, 10), nil
	case string:
		return appendString(nil, r), nil
	case bool:
		return strconv.AppendBool(nil, r), nil
	}
	return jsonx.Marshal(v)
}

// marshalRaw checks a handler's raw JSON result.
func marshalRaw(r json.RawMessage) ([]byte, error) {
	if !validJSON(r) {
		return nil, errInvalidRaw
	}
	return r, nil
}

var errInvalidRaw = &Error{Code: CodeInternalError, Message: "handler returned invalid JSON"}

// unmarshalResult decodes a result into v; a *json.RawMessage gets a copy of
// the raw bytes and nil discards the result.
func unmarshalResult(raw []byte, v any) error {
	switch r := v.(type) {
	case nil:
		return nil
	case *json.RawMessage:
		*r = append((*r)[:0], raw...)
		return nil
	}
	return json.Unmarshal(raw, v)
}

// frameText is what the requests of one frame share when their method
// names become strings. With a cache, it remembers the handler of the
// method looked up last: the calls of a batch are often all of one
// method.
type frameText struct {
	cache *lookup
	// last, if not nil, is the last plain name unquoted on this
	// connection (or in this batch): an equal one reuses its string, so
	// that a connection calling one method over and over, or a batch of
	// calls to one method, does not allocate its name for every call. On
	// a connection, it belongs to the reader.
	last *string
}

// lookup is a method's handler and mode as the router gave them.
type lookup struct {
	method string
	h      Handler
	mode   Mode
}

// lookup returns the handler and mode of method.
func (t frameText) lookup(r Router, method string) (Handler, Mode) {
	if c := t.cache; c != nil && c.h != nil && c.method == method {
		return c.h, c.mode
	}
	h, mode := r.Lookup(method)
	if t.cache != nil {
		*t.cache = lookup{method, h, mode}
	}
	return h, mode
}

// batchIDs gives the requests of a batch their ids as strings, cut from
// one string: a batch's hundred ids cost one allocation, of their own
// size, rather than one each or a copy of the whole frame.
func batchIDs(msgs []message) {
	n := 0
	for i := range msgs {
		if m := &msgs[i]; m.method != nil && m.hasID {
			n += len(m.id)
		}
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for i := range msgs {
		if m := &msgs[i]; m.method != nil && m.hasID {
			b.Write(m.id)
		}
	}
	s := b.String()
	for i := range msgs {
		if m := &msgs[i]; m.method != nil && m.hasID {
			m.idText, s = s[:len(m.id)], s[len(m.id):]
		}
	}
}

// idString returns the request's id as a string.
func (m *message) idString() string {
	if m.idText != "" {
		return m.idText
	}
	return string(m.id)
}
