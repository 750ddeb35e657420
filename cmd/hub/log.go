package main

import (
	"fmt"
	"io"
	stdlog "log"
	"os"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// timeLayout is RFC 3339 (an ISO 8601 profile) with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// newLogger returns the hub's logger, writing to w at level and up, in
// format: "json" (one object per line, timestamps in UTC, for log
// collectors), "console" (aligned columns, local time, for people), or
// "auto": console when w is a terminal, json otherwise. The level it
// returns changes the logger's while it runs (a reload sets it).
func newLogger(level, format string, w io.Writer) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := zap.ParseAtomicLevel(level)
	if err != nil {
		return nil, lvl, err
	}
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = func(t time.Time, e zapcore.PrimitiveArrayEncoder) {
			e.AppendString(t.UTC().Format(timeLayout))
		}
		ec.EncodeDuration = zapcore.StringDurationEncoder // "10s", as the flags write it, not 10
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout(timeLayout)
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, lvl, fmt.Errorf("unknown log format %q (want auto, json or console)", format)
	}
	out := zapcore.Lock(zapcore.AddSync(w))
	return zap.New(zapcore.NewCore(enc, out, lvl), zap.ErrorOutput(out)), lvl, nil
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// httpErrorLog is the error log of the http.Servers: failed TLS handshakes
// (port scanners, clients that do not trust the certificate) at Debug,
// everything else net/http reports at Warn.
func httpErrorLog(log *zap.Logger) *stdlog.Logger {
	log = log.Named("http")
	return stdlog.New(writerFunc(func(p []byte) (int, error) {
		msg := redact.Text(strings.TrimSpace(string(p)))
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
