package transport

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// frame is a WebSocket frame; masked, as a client sends it, or not, as a
// server does.
func frame(masked, fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var m byte
	if masked {
		m = 0x80
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, m|byte(n))
	case n <= 0xffff:
		f = append(f, m|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, m|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	if masked {
		f = append(f, 1, 2, 3, 4) // the masking key
	}
	return append(f, payload...)
}

func TestParseHeader(t *testing.T) {
	payload := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	tests := []struct {
		name    string
		frame   []byte
		want    Header
		control bool
		size    int // the header's length
	}{
		{"empty text", frame(false, true, 1, nil), Header{Fin: true, Opcode: 1}, false, 2},
		{"7-bit length", frame(false, true, 1, payload(5)), Header{Fin: true, Opcode: 1, Length: 5}, false, 2},
		{"7-bit length, the longest", frame(false, true, 2, payload(125)), Header{Fin: true, Opcode: 2, Length: 125}, false, 2},
		{"16-bit length, the shortest", frame(false, true, 1, payload(126)), Header{Fin: true, Opcode: 1, Length: 126}, false, 4},
		{"16-bit length, the longest", frame(false, true, 1, payload(0xffff)), Header{Fin: true, Opcode: 1, Length: 0xffff}, false, 4},
		{"64-bit length", frame(false, true, 2, payload(0x10000)), Header{Fin: true, Opcode: 2, Length: 0x10000}, false, 10},
		{"64-bit length, high bytes", []byte{0x82, 127, 0, 0, 0, 1, 0, 0, 0, 7}, Header{Fin: true, Opcode: 2, Length: 1<<32 | 7}, false, 10},
		{"masked, 7-bit", frame(true, true, 1, payload(3)), Header{Fin: true, Opcode: 1, Masked: true, Length: 3}, false, 6},
		{"masked, 16-bit", frame(true, true, 1, payload(300)), Header{Fin: true, Opcode: 1, Masked: true, Length: 300}, false, 8},
		{"masked, 64-bit", frame(true, true, 1, payload(70000)), Header{Fin: true, Opcode: 1, Masked: true, Length: 70000}, false, 14},
		{"first fragment", frame(false, false, 1, payload(4)), Header{Opcode: 1, Length: 4}, false, 2},
		{"middle fragment", frame(true, false, 0, payload(4)), Header{Opcode: 0, Masked: true, Length: 4}, false, 6},
		{"last fragment", frame(false, true, 0, payload(200)), Header{Fin: true, Opcode: 0, Length: 200}, false, 4},
		{"close", frame(true, true, 8, []byte{3, 232}), Header{Fin: true, Opcode: 8, Masked: true, Length: 2}, true, 6},
		{"ping", frame(false, true, 9, []byte("sb1")), Header{Fin: true, Opcode: 9, Length: 3}, true, 2},
		{"pong", frame(true, true, 10, nil), Header{Fin: true, Opcode: 10, Masked: true}, true, 6},
		{"reserved bits set", []byte{0xf1, 1, 'x'}, Header{Fin: true, Opcode: 1, Length: 1}, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, n, ok := ParseHeader(tt.frame)
			if !ok || h != tt.want || n != tt.size {
				t.Fatalf("ParseHeader = %+v, %d, %v; want %+v, %d, true", h, n, ok, tt.want, tt.size)
			}
			if h.Control() != tt.control {
				t.Errorf("Control() = %v, want %v", h.Control(), tt.control)
			}
			if want := tt.want.Opcode == 1 || tt.want.Opcode == 2; h.Data() != want {
				t.Errorf("Data() = %v, want %v", h.Data(), want)
			}
			// The header alone parses the same; cut anywhere before its
			// end, it does not parse, and says how long it is once its
			// first two bytes are there.
			if h2, n2, ok := ParseHeader(tt.frame[:n]); !ok || h2 != h || n2 != n {
				t.Errorf("the header alone: %+v, %d, %v", h2, n2, ok)
			}
			for cut := range n {
				want := n
				if cut < 2 {
					want = 2
				}
				if _, got, ok := ParseHeader(tt.frame[:cut]); ok || got != want {
					t.Errorf("cut after %d bytes: length %d, ok %v; want %d, false", cut, got, ok, want)
				}
			}
		})
	}
}
