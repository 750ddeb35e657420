package redact_test

import (
	"fmt"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/redact"
)

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://hub:s3cret@127.0.0.1:4222", "nats://hub:REDACTED@127.0.0.1:4222"},
		{"nats://s3cret@nats.internal:4222", "nats://REDACTED@nats.internal:4222"},
		{"nats://:s3cret@nats.internal", "nats://:REDACTED@nats.internal"},
		{"nats://a@b:p@ss@host", "nats://a@b:REDACTED@host"},
		{"https://login.example/jwks.json", "https://login.example/jwks.json"},
		{"https://login.example/jwks.json?token=s3cret", "https://login.example/jwks.json?token=REDACTED"},
		{"https://login.example/jwks?tenant=a&key=s3cret&s3cret", "https://login.example/jwks?tenant=REDACTED&key=REDACTED&REDACTED"},
		{"https://u:s3cret@login.example/p?x=s3cret#s3cret", "https://u:REDACTED@login.example/p?x=REDACTED#REDACTED"},
		{"https://login.example?token=s3cret", "https://login.example?token=REDACTED"},
		{"https://login.example#", "https://login.example#"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"", ""},
	} {
		if got := redact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"nats://hub:s3cret@h1:4222,nats://s3cret@h2:4222, tls://x:y@h3",
			"nats://hub:REDACTED@h1:4222,nats://REDACTED@h2:4222, tls://x:REDACTED@h3"},
		{`jwt: Get "https://login.example/jwks?token=s3cret": dial tcp 127.0.0.1:1: connect: connection refused`,
			`jwt: Get "https://login.example/jwks?token=REDACTED": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"natsbroker: NATS unreachable at nats://s3cret@127.0.0.1:4222: context deadline exceeded",
			"natsbroker: NATS unreachable at nats://REDACTED@127.0.0.1:4222: context deadline exceeded"},
		{"https://a.example/?list=s3cret,s3cret2", "https://a.example/?list=REDACTED"},
		{"dial ws://h/rpc?token=s3cret: refused.", "dial ws://h/rpc?token=REDACTED: refused."},
		{"(see https://h/p?token=s3cret).", "(see https://h/p?token=REDACTED)."},
		{"no url here: a:b@c", "no url here: a:b@c"},
	} {
		if got := redact.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func ExampleText() {
	fmt.Println(redact.Text("connect to nats://hub:s3cret@nats.internal:4222,nats://t0ken@10.0.0.2:4222"))
	// Output: connect to nats://hub:REDACTED@nats.internal:4222,nats://REDACTED@10.0.0.2:4222
}
