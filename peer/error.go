package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"strconv"
)

// Code is a JSON-RPC error code.
type Code int

// The codes of the JSON-RPC 2.0 specification, then the codes this project
// defines in the server range (see "Errors" in docs/protocol.md).
const (
	CodeParseError     Code = -32700 // invalid JSON
	CodeInvalidRequest Code = -32600 // not a valid request object
	CodeMethodNotFound Code = -32601 // no such method
	CodeInvalidParams  Code = -32602 // params do not fit the method
	CodeInternalError  Code = -32603 // the handler panicked or failed internally

	CodeApplication  Code = -32000 // a handler returned a plain Go error
	CodeUnauthorized Code = -32001 // authentication or authorization refused
	CodeCancelled    Code = -32002 // the call was cancelled (rpc.cancel)
	CodeTimeout      Code = -32003 // the call's deadline passed
	CodeOverloaded   Code = -32004 // over a limit: rate, subscriptions
	CodeShuttingDown Code = -32005 // going away: the call did not run
	CodeProviderLost Code = -32006 // the peer serving a forwarded call disconnected
	CodeNoSuchPeer   Code = -32007 // no connected peer matches the address of an rpc.call
)

// Error is a JSON-RPC error object. It travels on the wire and implements
// error: a handler returns one to choose the code sent back, and a failed
// [Conn.Call] returns one when the other side answered with an error.
type Error struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying data, encoded as JSON. If data cannot
// be encoded, its text is carried instead.
func (e *Error) WithData(data any) *Error {
	c := *e
	b, err := jsonx.Marshal(data)
	if err != nil {
		b, _ = jsonx.Marshal(fmt.Sprint(data))
	}
	c.Data = b
	return &c
}

func (e *Error) Error() string {
	return "jsonrpc error " + strconv.Itoa(int(e.Code)) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &peer.Error{Code: peer.CodeCancelled}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

var (
	// ErrClosed is returned (wrapped with the cause) by calls on a connection
	// that is closed or closes while they wait.
	ErrClosed = errors.New("peer: connection closed")
	// ErrTooSlow is the cause when a peer is closed, with 1008, for not
	// reading what it is sent: MaxQueue events waited for it, or its
	// writes made no progress for WriteStall (see Options).
	ErrTooSlow = errors.New("peer: too slow")
)

// errWriteStalled is the cause when writes made no progress for
// WriteStall.
var errWriteStalled = fmt.Errorf("%w: writes stalled", ErrTooSlow)

// Standard error objects, with the specification's messages.
func errParse() *Error          { return &Error{Code: CodeParseError, Message: "Parse error"} }
func errInvalidRequest() *Error { return &Error{Code: CodeInvalidRequest, Message: "Invalid Request"} }
func errMethodNotFound() *Error { return &Error{Code: CodeMethodNotFound, Message: "Method not found"} }
func errInternal() *Error       { return &Error{Code: CodeInternalError, Message: "Internal error"} }
func errTooDeep(limit int) *Error {
	return errInvalidRequest().WithData(fmt.Sprintf("nested deeper than %d levels", limit))
}
func errRateLimited() *Error  { return &Error{Code: CodeOverloaded, Message: "Rate limit exceeded"} }
func errShuttingDown() *Error { return &Error{Code: CodeShuttingDown, Message: "Shutting down"} }

// invalidParams wraps a binding failure as -32602, with its detail as data.
func invalidParams(err error) *Error {
	return (&Error{Code: CodeInvalidParams, Message: "Invalid params"}).WithData(err.Error())
}

// errCancelled is the cancel cause of a handler context ended by rpc.cancel.
var errCancelled = errors.New("peer: cancelled by the caller")

// ToError maps a handler's error to the error object sent on the wire:
// an *Error (anywhere in the chain) is sent as is, context.Canceled becomes
// -32002, context.DeadlineExceeded -32003, and any other error -32000 with
// the error's text as its message.
func ToError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		if e == nil { // a nil *Error returned as an error: a handler bug
			return errInternal()
		}
		return e
	case errors.Is(err, context.Canceled), errors.Is(err, errCancelled):
		return &Error{Code: CodeCancelled, Message: "Request cancelled"}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: "Request timed out"}
	default:
		return &Error{Code: CodeApplication, Message: err.Error()}
	}
}

// CloseError is the WebSocket close code and reason a connection closed
// with, sent by this side or received from the other. Every error that
// reports a closed connection (Conn.Err, the error of a call that the
// close failed) holds one: errors.As finds it.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	if e.Reason == "" {
		return "closed with code " + strconv.Itoa(e.Code)
	}
	return "closed with code " + strconv.Itoa(e.Code) + ": " + e.Reason
}

// WebSocket close codes that the peer and the hub use.
const (
	CloseNormal        = 1000 // orderly close
	CloseGoingAway     = 1001 // server shutting down
	ClosePolicy        = 1008 // policy violation, e.g. a peer too slow to keep up
	CloseTooBig        = 1009 // message over the size limit
	CloseInternalError = 1011 // unexpected condition

	// CloseAbnormal is never sent: it reports a connection that broke
	// without a close frame (reset, timed out), as WebSocket APIs do.
	CloseAbnormal = 1006
)
