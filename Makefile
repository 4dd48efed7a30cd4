# lockcheck: `make run` runs the main scenario end to end; `make test` passes the tests.
# Both install what is missing (Debian packages through scripts/install-deps.sh, Go modules).

GO      ?= go
BIN     := bin/lockcheck
PKGS    := ./...

.PHONY: all deps build run test vet repeat clean

all: build

deps:
	@./scripts/install-deps.sh
	@$(GO) mod download

build:
	$(GO) build -o $(BIN) ./cmd/lockcheck

# The main job: K2 on a single Redis, judged, with fencing side by side.
run: deps build
	./$(BIN) run scenarios/gc-pause-set-nx-px.yaml

# -p 1: packages one at a time. Scenario verdicts and lock tests depend on real timing (TTLs of a
# few hundred ms); running them side by side on 2 cores only adds scheduling noise.
test: deps
	$(GO) vet $(PKGS)
	$(GO) test -p 1 -count=1 -timeout 15m $(PKGS)

# Repeatability: each shipped scenario 10 times (slow: a few minutes).
repeat: deps build
	@for s in scenarios/*.yaml; do ./$(BIN) run --count 10 $$s | tail -n 1; done

clean:
	rm -rf bin results
