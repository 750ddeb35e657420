package jwtkey

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

func TestPEM(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})

	key, err := PEM(privPEM, true)
	if err != nil || SigningAlg(key) != "ES384" {
		t.Fatalf("private key: %T, %v", key, err)
	}
	key, err = PEM(pubPEM, false)
	if err != nil || len(Algs(key)) != 1 || Algs(key)[0] != "ES384" {
		t.Fatalf("public key: %T, %v", key, err)
	}
	for _, tt := range []struct {
		b       []byte
		private bool
		want    string
	}{
		{pubPEM, true, "signing needs the private key"},
		{privPEM, false, "the hub needs the public key only"},
		{[]byte("no pem"), false, "no PEM block"},
	} {
		if _, err := PEM(tt.b, tt.private); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("private %v: %v, want %q", tt.private, err, tt.want)
		}
	}
}

func TestSigningAlg(t *testing.T) {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key  any
		want string
	}{
		{make([]byte, 32), "HS256"},
		{make([]byte, 31), ""},
		{ed, "EdDSA"},
		{ed.Public(), ""}, // a public key cannot sign
		{"secret", ""},
	} {
		if got := SigningAlg(tt.key); got != tt.want {
			t.Errorf("SigningAlg(%T) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
