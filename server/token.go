package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// Subprotocol is the WebSocket subprotocol of Switchboard. A browser,
// whose WebSocket API cannot set an Authorization header, may send its
// token as a second subprotocol, BearerSubprotocolPrefix followed by the
// token in unpadded base64url:
//
//	new WebSocket(url, ["switchboard", "switchboard.bearer." + b64url(token)])
//
// The server selects Subprotocol when the client offers it, so the
// browser accepts the handshake, and never echoes the token back. A
// client that offers no subprotocol gets none.
const Subprotocol = "switchboard"

// BearerSubprotocolPrefix starts the subprotocol that carries a token;
// see [Subprotocol].
const BearerSubprotocolPrefix = "switchboard.bearer."

// BearerToken returns the token a client sent with a request, from the
// first of these that is present:
//
//   - an "Authorization: Bearer <token>" header (any other Authorization
//     scheme means no token);
//   - a "switchboard.bearer.<base64url token>" WebSocket subprotocol
//     ([Subprotocol]), as a browser sends it;
//   - the "token" query parameter.
//
// It returns "" when there is none, or when the subprotocol's token is not
// valid base64url. docs/security.md weighs the three.
func BearerToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), BearerSubprotocolPrefix)
			if !ok {
				continue
			}
			tok, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				return ""
			}
			return string(tok)
		}
	}
	return r.URL.Query().Get("token")
}

// TokenAuth returns an Authenticate function that accepts a request whose
// BearerToken is one of tokens. The identity is the token's name in the
// map (tokens maps each token to a name). A missing or unknown token is
// refused with ErrUnauthorized (401). Neither the token nor any part of
// it appears in the error.
//
// The comparison takes the same time whichever token was sent and however
// much of it was right: the sent token's SHA-256 digest is compared with
// every known token's digest in constant time.
func TokenAuth(tokens map[string]string) func(*http.Request) (any, error) {
	type known struct {
		digest [sha256.Size]byte
		name   string
	}
	all := make([]known, 0, len(tokens))
	for tok, name := range tokens {
		all = append(all, known{sha256.Sum256([]byte(tok)), name})
	}
	return func(r *http.Request) (any, error) {
		tok := BearerToken(r)
		if tok == "" {
			return nil, fmt.Errorf("%w: no token", ErrUnauthorized)
		}
		sent := sha256.Sum256([]byte(tok))
		var name string
		found := false
		for _, k := range all { // all of them: no early return
			if subtle.ConstantTimeCompare(sent[:], k.digest[:]) == 1 {
				name, found = k.name, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: unknown token", ErrUnauthorized)
		}
		return name, nil
	}
}
