package events

import (
	"io"
	"net/http"
	"strings"
)

// Twilio's default keywords: a message that is only one of them (any case, spaces
// around ignored) opts the sender out of, or back into, the number's messages. With
// Advanced Opt-Out, Twilio names the kind itself in OptOutType (custom or localised
// keywords).
var (
	stopWords  = map[string]bool{"STOP": true, "STOPALL": true, "UNSUBSCRIBE": true, "CANCEL": true, "END": true, "QUIT": true, "REVOKE": true, "OPTOUT": true}
	startWords = map[string]bool{"START": true, "YES": true, "UNSTOP": true}
)

// twilioInbound receives a message a recipient sent to a Twilio number, signed as
// Twilio signs its callbacks (X-Twilio-Signature over TwilioInboundURL and the
// parameters). STOP records an opt-out of the sender, START an opt-in
// (herald.record_opt_out, source "twilio"); any other message is ignored. A WhatsApp
// sender (whatsapp:+…) is its number, as herald keeps WhatsApp recipients: a STOP
// there stops the number's texts too. Senders of other channels (messenger:…) are
// not numbers and are ignored. The answer is an empty TwiML <Response/>: Twilio
// sends its own confirmation.
func (h *handler) twilioInbound(w http.ResponseWriter, r *http.Request) {
	body, release, ok := h.body(w, r)
	if !ok {
		return
	}
	defer release()
	form, ok := h.twilioForm(r, body, h.cfg.TwilioInboundURL)
	if !ok {
		h.cfg.Logger.Warn("inbound message refused: bad signature", "remote", r.RemoteAddr)
		answer(w, http.StatusUnauthorized, map[string]string{"error": "signature"})
		return
	}
	from := strings.TrimPrefix(form.Get("From"), "whatsapp:")
	word := strings.ToUpper(strings.TrimSpace(form.Get("Body")))
	var optedOut, known bool
	switch t := form.Get("OptOutType"); {
	case t == "STOP" || (t == "" && stopWords[word]):
		optedOut, known = true, true
	case t == "START" || (t == "" && startWords[word]):
		known = true
	}
	if known && strings.HasPrefix(from, "+") {
		var changed bool
		if err := h.q.QueryRow(r.Context(), `SELECT herald.record_opt_out('sms', $1, $2, 'twilio')`, from, optedOut).Scan(&changed); err != nil {
			h.cfg.Logger.Error("recording an opt-out failed", "err", err)
			answer(w, http.StatusServiceUnavailable, map[string]string{"error": "database unavailable"})
			return
		}
		h.cfg.Logger.Info("sms opt-out", "opted_out", optedOut, "changed", changed)
	}
	w.Header().Set("Content-Type", "text/xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`)
}
