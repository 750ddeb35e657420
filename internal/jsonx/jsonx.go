// Package jsonx encodes JSON as Switchboard writes it: as encoding/json
// does, but without escaping '<', '>' and '&' (which json.Marshal writes
// as \u003c, \u003e and \u0026, for HTML pages that JSON-RPC is not). A
// pattern such as chat.> is then written as "chat.>", as it was sent.
package jsonx

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooled is the largest buffer kept for reuse.
const maxPooled = 16 << 10

// Marshal returns the JSON encoding of v, as json.Marshal does but for
// HTML escaping.
func Marshal(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= maxPooled {
			e.buf.Reset()
			encoders.Put(e)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil // without Encode's newline
}

// NewEncoder returns a json.Encoder writing to w without HTML escaping.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
