# Switchboard: make run starts the demo hub, make test runs every check.

GO          ?= go
ADDR        ?= 127.0.0.1:8080
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s

SOAK        ?= 10m

.PHONY: run test vet lint unit fuzz fuzz-short bench soak build clean

## run: start the hub with the demo methods and the playground on http://$(ADDR)/
run:
	$(GO) build -o bin/hub ./cmd/hub
	exec bin/hub -addr $(ADDR) -demo

## build: build the hub and the rpc CLI into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## test: vet, staticcheck, every test with the race detector, a short fuzz pass
test: vet lint unit fuzz-short

vet:
	$(GO) vet ./...
	@if [ -f integration/go.mod ]; then cd integration && $(GO) vet ./...; fi

lint:
	$(GO) run $(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 ./...
	@if [ -f integration/go.mod ]; then cd integration && $(GO) test -race -count=1 ./...; fi

## fuzz-short: a few seconds of each fuzz target (make fuzz FUZZTIME=5m for longer)
fuzz-short:
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzRespond$$' -fuzztime=$(FUZZTIME) ./peer
	$(GO) test -run='^$$' -fuzz='^FuzzConn$$' -fuzztime=$(FUZZTIME) ./peer
	$(GO) test -run='^$$' -fuzz='^FuzzBind$$' -fuzztime=$(FUZZTIME) ./peer
	$(GO) test -run='^$$' -fuzz='^FuzzTopic$$' -fuzztime=$(FUZZTIME) ./hub
	$(GO) test -run='^$$' -fuzz='^FuzzMatch$$' -fuzztime=$(FUZZTIME) ./hub

## bench: the Go micro-benchmarks and the load generator against the hub
## and the floor (about ten minutes); writes docs/benchmarks.md and its chart
bench:
	$(GO) build -o bin/ ./cmd/hub ./cmd/bench
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./... | tee bin/micro.txt
	bin/bench run -start bin/hub -json bin/bench.jsonl
	bin/bench report -micro bin/micro.txt -o docs/benchmarks.md -chart docs/img/bench-ratios.svg bin/bench.jsonl

## soak: a mixed load against a fresh hub for $(SOAK) (not part of make test)
soak:
	$(GO) build -o bin/ ./cmd/hub ./cmd/bench
	bin/bench soak -start bin/hub -duration $(SOAK)

clean:
	rm -rf bin/
