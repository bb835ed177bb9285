#!/bin/sh
# The conformance suite's settings mapped onto `herald run` (HERALD tells where the
# binary is; the suite's tests build it). Runs the webhook sender for the channel.
ch=$(echo "$HERALD_CONFORMANCE_CHANNEL" | tr a-z A-Z)
export "HERALD_SENDER_$ch=webhook" "HERALD_${ch}_WEBHOOK_SECRETS=$HERALD_CONFORMANCE_SECRET" \
  HERALD_WEBHOOK_ALLOW="$HERALD_CONFORMANCE_ALLOW" HERALD_WEBHOOK_RATE=0 \
  HERALD_LEASE="${HERALD_CONFORMANCE_LEASE_SECONDS}s" HERALD_POLL_INTERVAL="${HERALD_CONFORMANCE_POLL_SECONDS}s" \
  HERALD_HTTP_ADDR=off HERALD_INTAKE=off HERALD_LOG_LEVEL=warn
[ -n "$HERALD_CONFORMANCE_CONCURRENCY" ] && export HERALD_CONCURRENCY="$HERALD_CONFORMANCE_CONCURRENCY"
exec "${HERALD:-herald}" run
