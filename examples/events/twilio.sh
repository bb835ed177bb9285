#!/usr/bin/env bash
# examples/events/twilio.sh — post a Twilio message status callback to herald, signed
# as Twilio signs it (X-Twilio-Signature: base64 HMAC-SHA1, keyed with the auth token,
# of the full URL followed by each parameter's name and value, sorted by name), for
# trying /v1/events/twilio by hand.
#
#   TWILIO_AUTH_TOKEN=… examples/events/twilio.sh URL NAME=VALUE...
#
# URL is the callback exactly as Twilio would call it: HERALD_TWILIO_STATUS_CALLBACK
# with the herald id the sender adds, e.g.
#   examples/events/twilio.sh 'http://127.0.0.1:8080/v1/events/twilio?herald_id=42' \
#     MessageSid=SM123 MessageStatus=undelivered ErrorCode=30003
# Values must not need URL encoding beyond what curl --data-urlencode does. Needs
# openssl and curl.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: TWILIO_AUTH_TOKEN=… $0 URL NAME=VALUE..." >&2; exit 2; }
: "${TWILIO_AUTH_TOKEN:?set TWILIO_AUTH_TOKEN}"
url=$1; shift
signed=$url
args=()
while IFS= read -r kv; do
  signed+="${kv%%=*}${kv#*=}"
  args+=(--data-urlencode "$kv")
done < <(printf '%s\n' "$@" | LC_ALL=C sort)
sig=$(printf '%s' "$signed" | openssl dgst -sha1 -hmac "$TWILIO_AUTH_TOKEN" -binary | base64 -w0)
curl -sS -X POST "$url" -H "X-Twilio-Signature: $sig" "${args[@]}"
echo
