# Switchboard: make run starts the demo hub, make test runs every check.

GO          ?= go
ADDR        ?= 127.0.0.1:8080
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Empty: each fuzz target runs its own number of executions (FUZZ_TARGETS);
# a duration (5m) or a count (1000000x) applies to every target.
FUZZTIME    ?=
# Minimizing each new interesting input may otherwise take up to a minute,
# during which nothing else is fuzzed: a 10 s run could spend all of it there.
FUZZMINTIME ?= 2s
BENCHTIME   ?= 1s

SOAK        ?= 10m

.PHONY: run run-cluster test vet lint unit web-test py-test screenshots fuzz fuzz-short bench soak build dist clean

## run: start the hub with the demo methods and the playground on http://$(ADDR)/
run:
	$(GO) build -o bin/hub ./cmd/hub
	exec bin/hub -addr $(ADDR) -demo

## run-cluster: three hubs on 127.0.0.1:8081-8083 joined over NATS (the
## first one runs it, embedded, on 127.0.0.1:4222, with JetStream, its
## files in bin/nats-store so that a restarted hub1 finds the stream);
## Ctrl-C, or a kill of make, stops them all
run-cluster:
	$(GO) build -o bin/ ./cmd/hub ./cmd/rpc
	@# The hubs' pids, not $$(jobs -p): dash runs a command substitution in a
	@# subshell that has no jobs. make passes a SIGTERM on to this shell.
	@trap 'kill $$h1 $$h2 $$h3 2>/dev/null; wait; exit 0' INT TERM; \
	bin/hub -addr 127.0.0.1:8081 -demo -node hub1 -nats embedded -nats-jetstream -nats-store bin/nats-store & h1=$$!; \
	bin/hub -addr 127.0.0.1:8082 -demo -node hub2 -nats nats://127.0.0.1:4222 -nats-jetstream & h2=$$!; \
	bin/hub -addr 127.0.0.1:8083 -demo -node hub3 -nats nats://127.0.0.1:4222 -nats-jetstream & h3=$$!; \
	wait

## build: build the hub and the rpc CLI into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## dist: release archives in bin/dist (deploy/dist.sh): the hub and rpc for
## linux, darwin and windows on amd64 and arm64, VERSION (default: git
## describe) stamped into the hub; TARGETS=linux/amd64 for fewer
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
TARGETS ?=
dist:
	VERSION=$(VERSION) TARGETS="$(TARGETS)" GO=$(GO) sh deploy/dist.sh

## test: vet, staticcheck, every test with the race detector (integration/
## too: a real hub process, headless Chromium), the browser client's node
## tests, the Python client's tests, a short fuzz pass
test: vet lint unit web-test py-test fuzz-short

vet:
	$(GO) vet ./...
	@if [ -f integration/go.mod ]; then cd integration && $(GO) vet ./...; fi

lint:
	$(GO) run $(STATICCHECK) ./...
	@if [ -f integration/go.mod ]; then cd integration && $(GO) run $(STATICCHECK) ./...; fi

unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Cost$$' ./peer # the exact cost bounds, which the race detector blurs
	@if [ -f integration/go.mod ]; then cd integration && $(GO) test -race -count=1 -timeout 20m ./...; fi # 3 min a package on an idle machine; a loaded one takes more

## web-test: the browser client's tests, with Node's own runner (run
## `npm ci` in web/ once first). Where JSON.parse lacks source text access
## (Node 20), a V8 flag turns it on so that big numbers are tested too.
web-test:
	@test -d web/node_modules || { echo "web/node_modules is missing: run (cd web && npm ci)"; exit 1; }
	cd web && node $$(node -e 'JSON.parse("1", (k, v, c) => process.exit(c && c.source ? 0 : 1))' || echo --harmony-json-parse-with-source) --test --test-timeout=180000 test/*.test.js

## py-test: the Python client (python/), installed with pip into a
## virtual environment (bin/pyenv) as a user would, against real hub
## processes with pytest; and mypy --strict on the package. Debian's
## python3-websockets, python3-pytest, python3-venv and mypy will do; PYTHON
## names the interpreter that sees them (/usr/bin/python3 by default, when
## there is one, as another python3 may come first on PATH).
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
py-test:
	$(GO) build -o bin/ ./cmd/hub ./cmd/rpc
	rm -rf bin/pyenv && $(PYTHON) -m venv --system-site-packages bin/pyenv
	bin/pyenv/bin/pip install -q --no-deps --no-build-isolation --no-index ./python
	cd python && $(PYTHON) -m mypy --strict switchboard examples
	cd python/tests && SWITCHBOARD_HUB=$(CURDIR)/bin/hub SWITCHBOARD_RPC=$(CURDIR)/bin/rpc \
		../../bin/pyenv/bin/python -m pytest -q -p no:cacheprovider -c ../pyproject.toml --rootdir .. .

## screenshots: the playground's and the admin page's pictures in docs/img, taken by the browser tests
screenshots:
	mkdir -p docs/img
	cd integration && SWITCHBOARD_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestPlayground$$' ./browser
	cd integration && SWITCHBOARD_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestAdminPage$$' ./adminpage

## fuzz-short: about ten seconds of each fuzz target (make fuzz FUZZTIME=5m for longer)
fuzz-short:
	$(MAKE) fuzz FUZZTIME=

# Each fuzz target, as package:name:executions, the executions being the
# short pass's budget: about ten seconds each on a 2-core machine (FuzzConn
# runs a connection per input, some 700 a second). A budget of executions,
# not of time: Go 1.26's fuzzing coordinator can end a time-bounded run
# with "context deadline exceeded" and no failing input (a race between
# its deadline and its workers, golang/go#75804, fixed in Go 1.27), which
# in CI failed FuzzConn twice in a row; a count sets no deadline.
FUZZ_TARGETS := ./peer:FuzzRespond:100000 ./peer:FuzzConn:6000 ./peer:FuzzBind:150000 \
	./hub:FuzzTopic:150000 ./hub:FuzzMatch:150000 ./hub/rules:FuzzAllow:20000 \
	./internal/ident:FuzzWord:200000

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget="$(FUZZTIME)"; \
		[ -n "$$budget" ] || budget=$${rest#*:}x; \
		echo "$(GO) test -run='^$$' -fuzz='^$$name$$' -fuzztime=$$budget -fuzzminimizetime=$(FUZZMINTIME) $$pkg"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$$budget -fuzzminimizetime=$(FUZZMINTIME) $$pkg; \
	done

## bench: the Go micro-benchmarks and the load generator against the hub
## and the floor (about fifteen minutes); writes docs/benchmarks.md and its chart
bench:
	$(GO) build -o bin/ ./cmd/hub ./cmd/bench
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./... | tee bin/micro.txt
	bin/bench run -start bin/hub -json bin/bench.jsonl
	bin/bench seqmode -start bin/hub -json bin/seqmode.jsonl
	bin/bench report -micro bin/micro.txt -seqmode bin/seqmode.jsonl -o docs/benchmarks.md -chart docs/img/bench-ratios.svg bin/bench.jsonl

## scale: one hub with as many peers as a process may hold here, then
## 100,000 over six hubs joined over NATS (some ten minutes; not part of
## make test); writes docs/scale.md and its chart. SCALENOTE says what else
## the machine was doing.
.PHONY: scale
SCALENOTE ?=
scale:
	$(GO) build -o bin/ ./cmd/hub ./cmd/bench
	bin/bench scale -hub bin/hub -json bin/scale.json; status=$$?; \
	bin/bench scalereport -note "$(SCALENOTE)" -o docs/scale.md -chart docs/img/scale-memory.svg bin/scale.json && exit $$status

## soak: a mixed load against a fresh hub for $(SOAK) (not part of make test)
soak:
	$(GO) build -o bin/ ./cmd/hub ./cmd/bench
	bin/bench soak -start bin/hub -duration $(SOAK)

clean:
	rm -rf bin/
