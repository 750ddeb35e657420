// Package web holds the browser side of Switchboard: switchboard.js, a
// dependency-free ES module client, and a playground page (index.html)
// that uses it. The hub command serves them at "/".
package web

import (
	"embed"
	"net/http"
)

//go:embed index.html switchboard.js switchboard.d.ts
var files embed.FS

// FS returns the files: index.html and switchboard.js.
func FS() embed.FS { return files }

// Handler serves the files, index.html at "/".
func Handler() http.Handler {
	return http.FileServerFS(files)
}
