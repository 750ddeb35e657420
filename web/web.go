// Package web holds the browser side of Switchboard: switchboard.js, the
// JSON-RPC client module (an npm package, @switchboard-rpc/client, with its
// types in switchboard.d.ts; its parts are the switchboard-*.js modules it
// imports), and the playground page that uses it. The hub command serves
// them at "/".
package web

import (
	"embed"
	"net/http"
	"strings"
)

//go:embed index.html playground.css playground*.js favicon.svg switchboard*.js switchboard.d.ts
var files embed.FS

// csp keeps the playground to its own files. It may connect anywhere: a
// ?hub= parameter points it at another hub.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss: http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the files, the playground at "/". switchboard.js (with the
// modules it imports) and its types may be imported by pages of any origin
// (Access-Control-Allow-Origin: *); whether such a page may then connect is
// the hub's origin check.
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/switchboard") && strings.HasSuffix(p, ".js"):
			h.Set("Access-Control-Allow-Origin", "*")
		case p == "/switchboard.d.ts":
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Content-Type", "application/typescript; charset=utf-8")
		case p == "/":
			h.Set("Content-Security-Policy", csp)
		}
		fs.ServeHTTP(w, r)
	})
}

// Has reports whether Handler serves a file at path ("/" is the
// playground): what anyone may load, as opposed to the hub's data.
func Has(path string) bool {
	if path == "/" {
		return true
	}
	name := path[min(1, len(path)):]
	f, err := files.Open(name)
	if err != nil {
		return false
	}
	st, err := f.Stat()
	f.Close()
	return err == nil && !st.IsDir()
}
