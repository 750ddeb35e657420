package main

import (
	stdlog "log"
	"strings"

	"go.uber.org/zap"
)

// httpErrorLog is the error log of the http.Servers: failed TLS handshakes
// (port scanners, clients that do not trust the certificate) at Debug,
// everything else net/http reports at Warn.
func httpErrorLog(log *zap.Logger) *stdlog.Logger {
	log = log.Named("http")
	return stdlog.New(writerFunc(func(p []byte) (int, error) {
		msg := strings.TrimSpace(string(p))
		if strings.HasPrefix(msg, "http: TLS handshake error") {
			log.Debug("TLS handshake failed", zap.String("error", msg))
		} else {
			log.Warn("http server error", zap.String("error", msg))
		}
		return len(p), nil
	}), "", 0)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
