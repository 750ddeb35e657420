// Package web holds the browser side of Switchboard: switchboard.js, a
// dependency-free ES module client, and a playground page (index.html)
// that uses it. The hub command serves them at "/".
package web

import (
	"embed"
	"net/http"
)

//go:embed index.html switchboard.js
var files embed.FS

// Handler serves the files, index.html at "/".
func Handler() http.Handler {
	return http.FileServerFS(files)
}
