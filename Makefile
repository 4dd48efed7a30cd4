# lockcheck: `make run` runs the main scenario end to end; `make test` passes the tests.
# Both install what is missing (Debian packages through scripts/install-deps.sh, Go modules).

GO      ?= go
BIN     := bin/lockcheck
PKGS    := ./...

.PHONY: all deps build run test test-pure test-docker test-packages tidy-check flakes flakes-load vet repeat debate debate-repeat \
	debate-repeat-docker jepsen-etcd matrix matrix-repeat mutants bench hunt-bench soak byol track-record images clean

all: build

# Everything any target may need (make test): every Debian package, every Go module, test-only
# ones included. make run needs less (see below).
deps:
	@./scripts/install-deps.sh all
	@$(GO) mod download

# lockcheck and lockcheck-worker (the clients' program: a third of the CPU at each start), with a
# digest of the sources in both: lockcheck starts the worker beside it only when the digests agree
# (workloads.Program). Outside a git checkout there is no digest, and lockcheck is its own worker.
STAMP = $(shell git rev-parse -q --verify HEAD >/dev/null 2>&1 && { git rev-parse HEAD; git diff HEAD; \
	git ls-files -z -o --exclude-standard | xargs -0 -r cat; } | sha256sum | cut -c1-16)
build:
	$(GO) build -ldflags "-X github.com/lockcheck/lockcheck/workloads.Build=$(STAMP)" -o $(dir $(BIN)) ./cmd/lockcheck ./cmd/lockcheck-worker

# The main job: K2 on a single Redis, judged, with fencing side by side. It installs only what
# that scenario needs (redis-server, libfaketime) and builds the quick-start lockcheck: Redis on
# local processes, without the other service kinds' clients and the Docker client, which are most
# of a fresh build (package internal/quickstart). go build fetches only the modules it imports;
# make build builds the whole lockcheck. The packages install while Go builds (neither needs the
# other): on a fresh machine the apt step (about 8 s) hides behind the build. The compiler runs
# without its garbage collector until a process holds 1.5 GiB (GOGC=off, GOMEMLIMIT): a cold build
# is CPU-bound on 2 cores, and collecting was a sixth of its CPU time (docs/COMMANDS.md#make-targets).
QUICK_BUILD = GOGC=off GOMEMLIMIT=1500MiB $(GO) build -tags quickstart -o $(BIN) ./cmd/lockcheck
run:
	@./scripts/install-deps.sh redis & apt=$$!; \
	echo "$(QUICK_BUILD)"; \
	$(QUICK_BUILD) || { wait $$apt; exit 1; }; \
	wait $$apt
	./$(BIN) run scenarios/debate/k2-set-nx-px.yaml

# Two parts, after the build (which then serves go vet and the tests from Go's cache). First the
# pure packages' tests (no servers, no timing that load can upset: checkers, parsers, docs), two
# packages at a time, with go vet. Then the packages that start real servers, two packages at a
# time (-p 2): a run mostly waits (holds, TTLs), so side by side they take about half the time,
# and every scenario has its own servers, ports and folder. Measured, not assumed:
# docs/COMMANDS.md#make-targets. A package not listed in PURE_PKGS counts as one with real
# servers. Last, the tests that run the matrix against mutant designs (built with the mutants tag,
# locks/mutants.go) on real servers. The docker provider's suite, with its images (minutes to
# build the first time), is test-docker's; .ci/run runs both.
PURE_PKGS := ./checker ./clock ./debate ./history ./internal/forward ./internal/modbuild \
	./internal/portlock ./internal/redisopt ./internal/rundir ./internal/shard ./internal/yamlpos ./internal/yamltime \
	./junit ./providers/docker/images ./providers/faketime ./proxies ./scenarios ./services ./hunt ./shrink \
	./tools/doclinks ./tools/flakes ./tools/layers ./tools/lockhunt ./tools/lockmutants
# The longest real-server packages first, longest first (as measured two at a time on 2 cores): the
# runner takes one lane, the others fill the second, and the short ones come last, so neither lane
# ends long after the other.
SLOW_PKGS := ./runner ./cmd/lockcheck ./locks ./matrix ./services/redis ./lockchecktest ./nemesis \
	./services/zookeeper ./report ./services/etcd ./services/postgres
MODULE    := github.com/lockcheck/lockcheck
REAL_PKGS  = $(SLOW_PKGS:./%=$(MODULE)/%) \
	$(filter-out $(SLOW_PKGS:./%=$(MODULE)/%) $(PURE_PKGS:./%=$(MODULE)/%),$(shell $(GO) list $(PKGS)))

test: deps tidy-check build
	@$(MAKE) --no-print-directory test-pure
	$(GO) test -p 2 -count=1 -timeout 15m $(REAL_PKGS)
	$(GO) test -tags mutants -count=1 -run '^TestMutant' ./matrix

# The docker provider's suite: its container images, built from Debian's packages on this machine
# (a few minutes the first time), then the tests that run containers (skipped, in one line each,
# by make test); it needs a Docker daemon and fails without one.
test-docker: deps images
	LOCKCHECK_DOCKER_TESTS=1 $(GO) test -p 1 -count=1 -timeout 15m ./providers/docker
	LOCKCHECK_DOCKER_TESTS=1 $(GO) test -count=1 -timeout 5m -run '^TestDocker' ./cmd/lockcheck

# The two lists, one a line (make bench times the parts of make test with them).
test-packages:
	@echo $(PURE_PKGS)
	@echo $(REAL_PKGS)

# The first part of make test alone: vet, the mutants' build and the pure packages' tests.
test-pure:
	$(GO) vet $(PKGS)
	$(GO) vet -tags mutants ./locks ./matrix ./tools/lockmutants
	$(GO) test -tags mutants -count=1 ./tools/lockmutants
	$(GO) test -p 2 -count=1 $(PURE_PKGS)

# The docker provider's container images, built from Debian's packages on this machine (no
# registry needed); only what is missing is built (a few minutes the first time, then seconds).
images: deps build
	./$(BIN) images

# go.mod and go.sum must be exactly what `go mod tidy` makes of the code (it prints the diff if not).
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy and commit the result" >&2; exit 1; }

# Developer tools (flakes, mutants, bench, hunt-bench, soak) are programs under tools/, on top of
# every other package (nothing outside tools/ imports them; tools/layers checks it): not part of
# the lockcheck binary, built or run by their targets.

# Flaky-test hunt: each package's tests FLAKES_N times (uncached), one package at a time; lists every
# test that failed at least once, with its output, and exits 1 if any did. FLAKES_PKGS narrows it,
# e.g. make flakes FLAKES_N=3 FLAKES_PKGS="./internal/proc ./checker".
FLAKES_N    ?= 5
FLAKES_PKGS ?= $(PKGS)
flakes: deps
	$(GO) run ./tools/flakes -n $(FLAKES_N) $(FLAKES_PKGS)

# The same under load, as CI meets it: FLAKES_N rounds of make test's real-server packages, two at
# a time as make test runs them, with FLAKES_LOAD busy loops beside them; lists every test that
# failed at least once, its rate and its output. make flakes-load FLAKES_N=1 for one round.
FLAKES_LOAD ?= 2
flakes-load: deps build
	$(GO) run ./tools/flakes -n $(FLAKES_N) -p 2 -load $(FLAKES_LOAD) $(REAL_PKGS)

# Repeatability: each shipped scenario 10 times (slow: a few minutes).
repeat: deps build
	@for s in scenarios/*.yaml scenarios/debate/*.yaml; do ./$(BIN) run --count 10 $$s | tail -n 1; done

# The debate, claim by claim: every scenario in scenarios/debate/ once (random schedules over 20
# seeds), written to results/DEBATE.md with the stored repeatability figures (~5 minutes).
debate: deps build
	./$(BIN) debate --seeds 20 --out results/DEBATE.md

# Repeatability: each debate scenario 20 times (random ones over 20 seeds) under two conditions,
# quiet (one run at a time) and loaded (two at a time: every run has another beside it), stored
# in scenarios/debate/repeatability.json for `make debate` to show (slow: about 2 hours on 2
# cores). debate-repeat-docker measures the docker provider the same way.
DEBATE_REPEAT := --count 20 --seeds 20 --record scenarios/debate/repeatability.json
debate-repeat: deps build
	./$(BIN) debate $(DEBATE_REPEAT) --parallel 1 --results results/debate-quiet --out results/DEBATE-quiet.md
	./$(BIN) debate $(DEBATE_REPEAT) --parallel 2 --results results/debate-loaded --out results/DEBATE.md

debate-repeat-docker: deps images
	./$(BIN) debate $(DEBATE_REPEAT) --provider docker --parallel 1 --results results/debate-docker-quiet --out results/DEBATE-docker-quiet.md
	./$(BIN) debate $(DEBATE_REPEAT) --provider docker --parallel 2 --results results/debate-docker-loaded --out results/DEBATE-docker.md

# A run shaped like Jepsen's etcd 3.4.3 lock-set test over seeds (or runs) 1..JEPSEN_SEEDS (~9 minutes
# for 8 on 2 cores): the lock design JEPSEN_LOCK on the etcd server JEPSEN_SERVER (server.version:
# 3.4.23 is Debian's etcd on PATH; 3.4.3 and 3.5.x are built once, minutes), with random client
# pauses (JEPSEN_SHAPE=client-pauses, scenarios/jepsen/random-pauses-etcd-unchecked.yaml) or
# Jepsen's own pauses of the leader and of every member (server-pauses, .../server-pauses-etcd.yaml).
# Writes results/jepsen-etcd/<name>.md, prints each run's register table and the unfenced
# register's lost share of acknowledged updates over every run; docs/JEPSEN-ETCD.md compares them.
#   make jepsen-etcd JEPSEN_LOCK=etcd-lock-rpc JEPSEN_SERVER=3.4.3 JEPSEN_SHAPE=server-pauses
JEPSEN_LOCK   ?= etcd-unchecked
JEPSEN_SERVER ?= 3.4.23
JEPSEN_SHAPE  ?= client-pauses
JEPSEN_SEEDS  ?= 8
JEPSEN_FILE   := scenarios/jepsen/$(if $(filter server-pauses,$(JEPSEN_SHAPE)),server-pauses-etcd,random-pauses-etcd-unchecked).yaml
JEPSEN_NAME   := jepsen-$(JEPSEN_SHAPE)-$(JEPSEN_LOCK)-$(JEPSEN_SERVER)
jepsen-etcd: deps build
	rm -rf results/jepsen-etcd/$(JEPSEN_NAME) results/jepsen-etcd/$(JEPSEN_NAME).d
	mkdir -p results/jepsen-etcd/$(JEPSEN_NAME).d
	sed -e 's/^name: .*/name: $(JEPSEN_NAME)/' -e 's/^lock: .*/lock: $(JEPSEN_LOCK)/' \
	  -e 's/^server: .*/server: {version: $(JEPSEN_SERVER)}/' $(JEPSEN_FILE) \
	  > results/jepsen-etcd/$(JEPSEN_NAME).d/$(JEPSEN_NAME).yaml
	./$(BIN) debate --scenarios results/jepsen-etcd/$(JEPSEN_NAME).d --seeds $(JEPSEN_SEEDS) --count $(JEPSEN_SEEDS) --results results/jepsen-etcd \
	  --out results/jepsen-etcd/$(JEPSEN_NAME).md --repeatability ""
	@for d in results/jepsen-etcd/$(JEPSEN_NAME)/2*/; do echo "$$d"; ./$(BIN) check "$$d" | grep -E '^(register|unfenced|fenced)' || true; done \
	  > results/jepsen-etcd/$(JEPSEN_NAME).tables
	@cat results/jepsen-etcd/$(JEPSEN_NAME).tables
	@awk '$$1 == "unfenced" { lost += $$3; acked += $$4 } END { if (acked) printf "$(JEPSEN_NAME): unfenced lost %d of %d acknowledged updates (%.1f %%)\n", lost, acked, 100 * lost / acked }' \
	  results/jepsen-etcd/$(JEPSEN_NAME).tables

# Bring your own lock: every adapter scenario (scenarios/byol/: K2, K3 and a control for redis-py,
# kazoo and Curator, each library run as it is through the lock-client protocol), about 2 minutes.
# make test runs one K2 and the control per adapter.
byol: deps build
	@fail=0; for s in scenarios/byol/*.yaml; do \
	  out=$$(./$(BIN) run $$s 2>&1) || fail=1; echo "$$out" | grep -E '^(scenario |verdict |lockcheck:)'; \
	done; exit $$fail

# The track record: published lock bugs, each in the version that shipped it beside the version
# that fixed it (scenarios/track-record/, docs/TRACK-RECORD.md); exit 1 if a verdict misses its
# expect block. A library named at a version (redsync@v4.0.3) is built on first use from the Go
# module proxy into the user's cache: on a fresh machine the first run takes about 5 minutes
# (3.5 of them building), later ones about 1.5. make test runs those without a "# slow:" line.
track-record: deps build
	@fail=0; for s in scenarios/track-record/*.yaml; do \
	  out=$$(./$(BIN) run $$s 2>&1) || fail=1; echo "$$out" | grep -E '^(scenario |verdict |  [a-z_.]+: expected |lockcheck:)'; \
	done; exit $$fail

# Every lock under every column: the generic faults and the columns derived from what each design
# claims, as many runs side by side as the cores carry (--parallel auto: ~10 minutes on 2 cores;
# --parallel 1: ~45); writes
# results/matrix/latest/matrix.{md,json,html}.
matrix: deps build
	./$(BIN) matrix

# Repeatability: the whole default grid twice, each run's statuses counted cell by cell into
# matrix/repeatability.json, which lockcheck builds in and judges the cells that vary by (their
# rates); each run lists the cells whose runs differed (about 20 minutes on 2 cores).
matrix-repeat: deps build
	./$(BIN) matrix --record matrix/repeatability.json --results results/matrix-repeat
	./$(BIN) matrix --record matrix/repeatability.json --results results/matrix-repeat

# Mutants: each mutant design (a shipped design with one realistic bug, locks/mutants.go, built
# only with the mutants tag) and its original under every matrix column; prints which columns
# caught each mutant (its cell worse than the original's) and writes results/MUTANTS.md and
# results/MUTANTS.json (figure 10 of make bench); exit 1 if a mutant is caught by no column.
# MUTANTSFLAGS passes options, e.g. MUTANTSFLAGS="--mutants mutant-zk-no-relist --faults waiter-expires".
mutants: deps
	$(GO) build -tags mutants -o bin/lockmutants ./tools/lockmutants
	./bin/lockmutants $(MUTANTSFLAGS)

# Benchmarks: every figure printed and written to results/BENCH.md, in about 25 minutes on 2 cores
# (the test suite, which it times, is 10 of them); figure 7 is `lockcheck check` end to end on
# million-event histories, with peak RSS; figure 9 is random versus hunt (make hunt-bench: all of
# it); figure 10 is the score of the last make mutants (results/MUTANTS.json); figure 11 is time to
# verdict (make run's parts from empty Go caches, the images from scratch, a part of the matrix at
# --parallel 1 and 2); figure 12 is the CPU a matrix cell costs, by family, against a plain run
# (bin/lockcheck, hence build). BENCHFLAGS passes options to bin/lockbench, e.g. BENCHFLAGS=--quick
# (rough figures in a few minutes) or --skip=5.
bench: deps build
	$(GO) build -o bin/lockbench ./tools/lockbench
	./bin/lockbench $(BENCHFLAGS)

# Random versus hunt packages: per design × fault family, how many of 20 seeds find a double
# ownership within 30 s, and how soon → results/HUNT.md. HUNTFLAGS narrows it, e.g.
# HUNTFLAGS='--designs set-nx-px --faults pause --seeds 5'.
hunt-bench: deps
	$(GO) build -o bin/lockhunt ./tools/lockhunt
	./bin/lockhunt $(HUNTFLAGS)

# Figure 8 alone: a 30-minute soak of a random-mixed scenario (lockcheck run --duration 30m), the
# controller's memory sampled as it runs, then the judging timed. Its figures are kept in
# results/soak.json, which `make bench` shows.
soak: deps
	$(GO) build -o bin/lockbench ./tools/lockbench
	./bin/lockbench --soak 30m --skip 1,2,3,4,5,6,7,12 --out results/SOAK.md --results results --keep $(BENCHFLAGS)

clean:
	rm -rf bin results
