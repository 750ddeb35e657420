package transport

import "encoding/binary"

// Header is a WebSocket frame header (RFC 6455, section 5.2), as far as
// this module reads one: to know where a frame ends, and whether a message
// does. The WebSocket library validates frames; ParseHeader does not.
type Header struct {
	Fin    bool   // the last frame of its message (always, for a control frame)
	Opcode byte   // 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong
	Masked bool   // a masking key follows the length: a client's frame
	Length uint64 // the payload's length, in bytes
}

// Control reports whether the frame is a control frame (close, ping,
// pong), which may come between the frames of a fragmented message and
// belongs to none.
func (h Header) Control() bool { return h.Opcode&0x08 != 0 }

// Data reports whether the frame starts a message: text or binary.
func (h Header) Data() bool { return h.Opcode == 1 || h.Opcode == 2 }

// MaxHeaderLen is the length of the longest frame header: 2 bytes, 8 of
// extended length and 4 of masking key.
const MaxHeaderLen = 14

// ParseHeader parses the frame header at the start of b and returns it
// with its length in bytes. When b holds only part of the header, ok is
// false and n is how long the header is, as far as b tells (2 while b
// holds fewer than 2 bytes): the payload length is in 7 bits, or in the 16
// or 64 bits that follow when those say 126 or 127.
func ParseHeader(b []byte) (h Header, n int, ok bool) {
	if len(b) < 2 {
		return Header{}, 2, false
	}
	h.Fin = b[0]&0x80 != 0
	h.Opcode = b[0] & 0x0f
	h.Masked = b[1]&0x80 != 0
	ext := 0 // bytes of extended length
	switch l := b[1] & 0x7f; l {
	case 126:
		ext = 2
	case 127:
		ext = 8
	default:
		h.Length = uint64(l)
	}
	n = 2 + ext
	if h.Masked {
		n += 4
	}
	if len(b) < n {
		return Header{}, n, false
	}
	switch ext {
	case 2:
		h.Length = uint64(binary.BigEndian.Uint16(b[2:]))
	case 8:
		h.Length = binary.BigEndian.Uint64(b[2:])
	}
	return h, n, true
}
