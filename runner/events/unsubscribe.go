package events

import (
	"fmt"
	"html"
	"net/http"

	"github.com/herald/herald/runner/unsubscribe"
)

// unsubscribePage answers the GET of a link: a page whose button POSTs to it. A GET
// changes nothing, since mail scanners and previews fetch links nobody clicked (RFC
// 8058 §3.2); the mail client's one-click POST goes straight to unsubscribe.
func (h *handler) unsubscribePage(w http.ResponseWriter, r *http.Request) {
	if _, ok := unsubscribe.Check(h.cfg.UnsubscribeKeys, r.PathValue("token")); !ok {
		page(w, http.StatusNotFound, "This unsubscribe link is not valid.", "")
		return
	}
	page(w, http.StatusOK, "Stop receiving these e-mails?",
		`<form method="post" action="`+html.EscapeString(r.URL.Path)+`"><button type="submit">Unsubscribe</button></form>`)
}

// unsubscribe records the message's recipient as unsubscribed (herald.unsubscribe:
// the outcome, a log event, herald.suppressions). A second POST changes nothing; a
// message no longer stored (purged) is 410, so nobody is told they are unsubscribed
// when they are not.
func (h *handler) unsubscribe(w http.ResponseWriter, r *http.Request) {
	id, ok := unsubscribe.Check(h.cfg.UnsubscribeKeys, r.PathValue("token"))
	if !ok {
		h.cfg.Logger.Warn("unsubscribe refused: bad link", "remote", r.RemoteAddr)
		page(w, http.StatusNotFound, "This unsubscribe link is not valid.", "")
		return
	}
	var taken bool
	if err := h.q.QueryRow(r.Context(), `SELECT herald.unsubscribe($1)`, id).Scan(&taken); err != nil {
		h.cfg.Logger.Error("recording an unsubscribe failed", "message", id, "err", err)
		page(w, http.StatusServiceUnavailable, "Something went wrong; please try again later.", "")
		return
	}
	if !taken {
		page(w, http.StatusGone, "This unsubscribe link has expired.", "")
		return
	}
	h.cfg.Logger.Info("unsubscribed", "message", id)
	page(w, http.StatusOK, "You are unsubscribed.", "")
}

// page writes a minimal HTML page.
func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%[1]s</title><h1>%[1]s</h1>%[2]s\n", html.EscapeString(title), body)
}
