package main

import (
	"crypto/x509"
	"os"
)

// loadCA reads the CA certificates of -ca, or else of $RPC_CA, into
// o.roots; without either, the system's roots are used. A file that
// cannot be read or holds no certificate is a usage error.
func (o *cli) loadCA() error {
	file := o.ca
	if file == "" {
		file = os.Getenv("RPC_CA")
	}
	if file == "" {
		return nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return usagef("-ca: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return usagef("-ca: no PEM certificate in %s", file)
	}
	o.roots = roots
	return nil
}
