// Package jwtkey reads the keys JSON Web Tokens are verified and signed
// with, and says which algorithms each serves: the hub's verifier
// (server.JWT) reads public keys, hub gentoken (cmd/hub) private ones.
package jwtkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// Algs returns the algorithms a verification key (an HMAC secret as
// []byte, or an RSA, EC P-256/P-384 or Ed25519 public key) verifies, its
// usual one first; nil for a key of no use.
func Algs(key any) []string {
	switch k := key.(type) {
	case []byte:
		return []string{"HS256", "HS384", "HS512"}
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256"}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []string{"ES256"}
		case elliptic.P384():
			return []string{"ES384"}
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}
	}
	return nil
}

// SigningAlg returns the usual algorithm of a key that can sign: an HMAC
// secret of at least 32 bytes, or the private key of a public key [Algs]
// serves; "" for any other.
func SigningAlg(key any) string {
	switch k := key.(type) {
	case []byte:
		if len(k) < 32 {
			return ""
		}
	case crypto.Signer:
		key = k.Public()
	default:
		return ""
	}
	if algs := Algs(key); algs != nil {
		return algs[0]
	}
	return ""
}

// PEM returns the key of b's first PEM block, one that [Algs] serves: a
// public key ("PUBLIC KEY", "RSA PUBLIC KEY", or a "CERTIFICATE"'s), or
// when private, a private key that can sign ("PRIVATE KEY", "RSA PRIVATE
// KEY", "EC PRIVATE KEY").
func PEM(b []byte, private bool) (any, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch t := block.Type; {
	case t == "PUBLIC KEY" && !private:
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case t == "RSA PUBLIC KEY" && !private:
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case t == "CERTIFICATE" && !private:
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	case t == "PRIVATE KEY" && private:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case t == "RSA PRIVATE KEY" && private:
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case t == "EC PRIVATE KEY" && private:
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case private:
		return nil, fmt.Errorf("a PEM %q: signing needs the private key (-key FILE), the hub holds only the public one", t)
	default:
		return nil, fmt.Errorf("a PEM %q; the hub needs the public key only", t)
	}
	if err != nil {
		return nil, err
	}
	if private && SigningAlg(key) == "" || !private && Algs(key) == nil {
		return nil, fmt.Errorf("a %T key, not RSA, EC P-256/P-384 or Ed25519", key)
	}
	return key, nil
}
