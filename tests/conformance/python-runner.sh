#!/bin/sh
# The conformance suite's settings mapped onto examples/python/runner.py; with an
# argument, one of tests/conformance/broken.py's deliberately broken variants.
export HERALD_CHANNEL="$HERALD_CONFORMANCE_CHANNEL" HERALD_WEBHOOK_SECRETS="$HERALD_CONFORMANCE_SECRET" \
  HERALD_WEBHOOK_ALLOW="$HERALD_CONFORMANCE_ALLOW" HERALD_LEASE_SECONDS="$HERALD_CONFORMANCE_LEASE_SECONDS" \
  HERALD_POLL_SECONDS="$HERALD_CONFORMANCE_POLL_SECONDS"
[ -n "$HERALD_CONFORMANCE_CONCURRENCY" ] && export HERALD_CONCURRENCY="$HERALD_CONFORMANCE_CONCURRENCY"
[ -n "$HERALD_CONFORMANCE_PER_ENDPOINT" ] && export HERALD_WEBHOOK_PER_ENDPOINT="$HERALD_CONFORMANCE_PER_ENDPOINT"
dir=$(dirname "$0")
if [ -n "$1" ]; then exec /usr/bin/python3 "$dir/broken.py" "$1"; fi
exec /usr/bin/python3 "$dir/../../examples/python/runner.py"
