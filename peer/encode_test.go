package peer

import (
	"encoding/json"
	"errors"
	"testing"
)

// Call encodes params into a reused buffer: the bytes, and the errors, are
// those of marshalParams, which Notify and Batch use.
func TestEncodeParamsLikeMarshalParams(t *testing.T) {
	type point struct {
		X, Y int
		Tag  string `json:"tag,omitempty"`
	}
	var nilSlice []int
	for _, params := range []any{
		nil,
		[]int{1, 2},
		map[string]any{"a": "<b>&", "n": 1.5},
		point{X: 1, Y: 2, Tag: "é\u2028"},
		&point{},
		json.RawMessage(`{"raw": [1, 2]}`),
		json.RawMessage(`[1,`),
		nilSlice,
		"scalar",
		3,
		make(chan int),
	} {
		want, wantErr := marshalParams(params)
		for range 2 { // a fresh encoder, then a reused one
			enc, got, err := encodeParams(params)
			if string(got) != string(want) || (err == nil) != (wantErr == nil) || (wantErr != nil && err.Error() != wantErr.Error()) {
				t.Errorf("%#v: encodeParams = %s, %v; marshalParams = %s, %v", params, got, err, want, wantErr)
			}
			if err != nil && enc != nil {
				t.Errorf("%#v: an encoder returned with an error", params)
			}
			enc.release()
		}
	}
	var e *Error
	if _, _, err := encodeParams("scalar"); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Errorf("scalar params: %v, want -32602", err)
	}
}
