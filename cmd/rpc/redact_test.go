package main

import (
	"net"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// TestErrorsRedactTokens: a URL's ?token= never reaches stderr, in a usage
// error, a failed dial, a failed POST or a timeout.
func TestErrorsRedactTokens(t *testing.T) {
	dead := hubtest.DeadURL(t)
	httpDead := "http" + strings.TrimPrefix(dead, "ws")
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (in the kernel) and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"usage", []string{"call", "ftp://h/rpc?token=s3cret-a", "rpc.ping"}, exitUsage},
		{"dial", []string{"call", dead + "?token=s3cret-b", "rpc.ping"}, exitConn},
		{"several", []string{"call", dead + "?token=s3cret-c," + dead + "?token=s3cret-d", "rpc.ping"}, exitConn},
		{"post", []string{"call", httpDead + "?token=s3cret-e", "rpc.ping"}, exitConn},
		{"timeout", []string{"call", "-timeout", "200ms", "http://" + silent.Addr().String() + "/rpc?token=s3cret-f", "rpc.ping"}, exitTimeout},
		{"subscribe", []string{"subscribe", dead + "?token=s3cret-g", "news"}, exitConn},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rpc(t, "", tt.args...)
			if r.code != tt.code || strings.Contains(r.stderr, "s3cret") || !strings.Contains(r.stderr, "token=REDACTED") {
				t.Errorf("exit %d, stderr %q; want exit %d and the token redacted", r.code, r.stderr, tt.code)
			}
		})
	}
}
