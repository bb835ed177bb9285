# herald — the two commands are `make run` and `make test` (see README.md).
#
# With DATABASE_URL unset, every target that needs a database starts the
# project-local cluster (tests/devdb.sh: initdb into .devdb/, 127.0.0.1, a free port)
# and uses it; with DATABASE_URL set, that database is used as it is.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
TERN_VERSION := v2.4.2
# Resolve the database once per recipe: the given DATABASE_URL, or the local cluster.
DB := export DATABASE_URL="$${DATABASE_URL:-$$(tests/devdb.sh up)}" && [ -n "$$DATABASE_URL" ]

.PHONY: run test bench conformance build install migrate vet db db-stop db-destroy psql test-deps

## run: database up, herald installed, and the runner delivering to the sink (stdout); the
## intake is served open (HERALD_INTAKE_OPEN=true): a development setting
run: build
	@$(DB) && $(BIN)/herald migrate && \
	echo && echo "herald is installed in $$DATABASE_URL; the runner prints each delivery as a JSON line." && \
	echo "In another terminal, in this folder, point herald's CLI and psql at it:" && \
	echo "  export DATABASE_URL=$$DATABASE_URL PATH=$(BIN):\$$PATH" && \
	echo "and enqueue a notification:" && \
	echo "  psql \"$$DATABASE_URL\" -c \"SELECT herald.enqueue('email', 'ana@example.com', '{\\\"subject\\\": \\\"Hi\\\", \\\"text\\\": \\\"Hello Ana\\\"}')\"" && \
	echo "or over HTTP:" && \
	echo "  curl -s -X POST $${HERALD_HTTP_ADDR:-127.0.0.1:8080}/v1/messages -H 'Content-Type: application/json' -d '{\"channel\": \"sms\", \"recipient\": \"+14155550100\", \"payload\": {\"text\": \"Hello\"}}'" && \
	echo "Metrics and health: http://$${HERALD_HTTP_ADDR:-127.0.0.1:8080}/metrics and /healthz. Ctrl-C stops the runner." && echo && \
	HERALD_INTAKE_OPEN=$${HERALD_INTAKE_OPEN:-true} HERALD_SENDER_EMAIL=$${HERALD_SENDER_EMAIL:-sink:-} HERALD_SENDER_SMS=$${HERALD_SENDER_SMS:-sink:-} exec $(BIN)/herald run

## test: vet, format check, and every test against a real PostgreSQL
test: $(BIN)/tern $(BIN)/mailpit $(BIN)/smokescreen test-deps
	@$(DB) && export HERALD_TERN=$(BIN)/tern && \
	unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './.devdb/*')) && \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi && \
	$(GO) vet ./... && \
	$(GO) test -race -count=1 -timeout 30m ./...

## bench: every benchmark scenario, quick (flags: make bench BENCH_FLAGS='-duration 10s')
bench:
	@$(DB) && $(GO) run ./bench $(BENCH_FLAGS)

## conformance: check a runner in any language against docs/runner-contract.md:
## make conformance RUNNER='tests/conformance/python-runner.sh' (see tests/conformance)
conformance: build
	@$(DB) && [ -n "$(RUNNER)" ] || { echo "usage: make conformance RUNNER='command that starts the runner'"; exit 2; } && \
	HERALD=$(BIN)/herald $(GO) run ./tests/conformance -- $(RUNNER)

## build: the herald binary in .bin/ (with the commit it was built from: herald version)
build:
	$(GO) build -buildvcs=auto -o $(BIN)/herald ./cmd/herald

## install: the herald binary into $(PREFIX)/bin (default /usr/local)
PREFIX ?= /usr/local
install: build
	install -D -m 0755 $(BIN)/herald $(DESTDIR)$(PREFIX)/bin/herald

## migrate: install or upgrade herald in DATABASE_URL (or the local cluster)
migrate: build
	@$(DB) && $(BIN)/herald migrate

## psql: a psql session on DATABASE_URL (or the local cluster)
psql:
	@$(DB) && psql "$$DATABASE_URL"

## db / db-stop / db-destroy: the project-local cluster by hand
db:
	@tests/devdb.sh up
db-stop:
	@tests/devdb.sh stop
db-destroy:
	@tests/devdb.sh destroy

# What the tests need besides PostgreSQL: Debian's pgbouncer (the PgBouncer test),
# chromium (the console's browser test), openssl (an Ed25519 verifier that is not Go's,
# for the webhooks' v1a signatures),
# python3-psycopg (psycopg 3) and nodejs/npm, and examples/node's packages (pg), for
# the test that runs the producers in examples/.
# Only the missing ones are installed: a machine whose Node.js comes from elsewhere
# (NodeSource's package carries npm and conflicts with Debian's) keeps it.
test-deps:
	@pkgs=; /usr/bin/python3 -c 'import psycopg' 2>/dev/null || pkgs="$$pkgs python3-psycopg"; \
	  command -v npm >/dev/null || pkgs="$$pkgs nodejs npm"; \
	  { command -v pgbouncer || [ -x /usr/sbin/pgbouncer ]; } >/dev/null || pkgs="$$pkgs pgbouncer"; \
	  [ -x /usr/bin/chromium ] || pkgs="$$pkgs chromium"; \
	  command -v openssl >/dev/null || pkgs="$$pkgs openssl"; \
	  [ -z "$$pkgs" ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs >/dev/null; }
	@[ -d examples/node/node_modules/pg ] || npm ci --prefix examples/node --no-audit --no-fund --loglevel=error

# Mailpit, the real SMTP server of tests/mailpit_test.go.
MAILPIT_VERSION := v1.27.11
$(BIN)/mailpit:
	GOBIN=$(BIN) $(GO) install github.com/axllent/mailpit@$(MAILPIT_VERSION)

# Smokescreen, the egress proxy of tests/egress_proxy_test.go.
SMOKESCREEN_VERSION := v0.1.0
$(BIN)/smokescreen:
	GOBIN=$(BIN) $(GO) install github.com/stripe/smokescreen@$(SMOKESCREEN_VERSION)

# The tern CLI, for the test that installs herald the way a DBA without our binary does.
$(BIN)/tern:
	GOBIN=$(BIN) $(GO) install github.com/jackc/tern/v2@$(TERN_VERSION)
