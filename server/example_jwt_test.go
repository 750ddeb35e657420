package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/switchboard-rpc/switchboard/server"
)

// A server that verifies tokens against a JWKS URL is not ready while the
// keys are not loaded: its /readyz says 503, so that a load balancer sends
// its clients elsewhere until the JWKS answers.
func ExampleJWT_Ready() {
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer jwks.Close()
	j, err := server.NewJWT(context.Background(), &server.JWTOptions{JWKSURL: jwks.URL})
	if err != nil {
		log.Fatal(err)
	}
	defer j.Close() // stops fetching the JWKS again

	srv := server.New(&server.Options{Authenticate: j.Authenticate, Ready: j.Ready})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output: 503 jwks: no keys yet
}
