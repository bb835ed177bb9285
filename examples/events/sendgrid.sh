#!/usr/bin/env bash
# examples/events/sendgrid.sh — post a SendGrid Event Webhook batch to herald, signed
# as SendGrid signs it (ECDSA P-256 over SHA-256 of the timestamp followed by the
# body), for trying /v1/events/sendgrid by hand.
#
#   examples/events/sendgrid.sh keygen              # writes sendgrid-key.pem; prints the
#                                                   # verification key for HERALD_SENDGRID_EVENT_KEY
#   examples/events/sendgrid.sh URL BATCH.json      # signs BATCH.json with sendgrid-key.pem, posts it
#
# URL is herald's endpoint, e.g. http://127.0.0.1:8080/v1/events/sendgrid. Needs
# openssl and curl. KEY (default sendgrid-key.pem) names another key file.
set -euo pipefail
key=${KEY:-sendgrid-key.pem}
if [ "${1:-}" = keygen ]; then
  openssl ecparam -name prime256v1 -genkey -noout -out "$key"
  openssl ec -in "$key" -pubout -outform DER 2>/dev/null | base64 -w0
  echo
  exit 0
fi
[ $# -eq 2 ] || { echo "usage: $0 keygen | $0 URL BATCH.json" >&2; exit 2; }
url=$1 body=$2
ts=$(date +%s)
sig=$( { printf '%s' "$ts"; cat "$body"; } | openssl dgst -sha256 -sign "$key" | base64 -w0)
curl -sS -X POST "$url" -H 'Content-Type: application/json' \
  -H "X-Twilio-Email-Event-Webhook-Timestamp: $ts" \
  -H "X-Twilio-Email-Event-Webhook-Signature: $sig" \
  --data-binary @"$body"
echo
