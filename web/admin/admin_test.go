package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/web/admin"
)

func TestHandler(t *testing.T) {
	h := admin.Handler("/admin/")
	for path, want := range map[string]string{
		"/admin/":          "<title>Switchboard admin</title>",
		"/admin/admin.js":  `call("admin.peers"`,
		"/admin/admin.css": "prefers-color-scheme: dark",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, want %q in the body", path, rec.Code, want)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/admin.go", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /admin/admin.go: %d, want 404", rec.Code)
	}
}
