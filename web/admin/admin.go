// Package admin holds the hub's admin page: a live view of the peers,
// topics, providers and nodes of a hub (or of its whole cluster), made of
// the admin API's calls (docs/operations.md) over a WebSocket to the
// operator's endpoint, with a button to disconnect a peer. The hub command
// serves it at /admin/ on the admin listener (-metrics-addr), whose /rpc
// it calls with the operator's token.
package admin

import (
	"embed"
	"net/http"
)

//go:embed index.html admin.js admin.css
var files embed.FS

// csp keeps the page to its own files, and to WebSockets of its own host.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page's files under prefix (such as "/admin/"). They
// hold no secret: the page asks for the operator's token, and the
// endpoint it calls checks it.
func Handler(prefix string) http.Handler {
	fs := http.StripPrefix(prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		fs.ServeHTTP(w, r)
	})
}
