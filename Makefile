# Tributary. `make help` lists the targets.

SHELL    := bash
GO       ?= go
BIN      := bin/tributary
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 30s
TEST_FUZZTIME ?= 3s

.DEFAULT_GOAL := build
.PHONY: help build release test test-long fuzz bench verify docs demo clean bench-compare

help:
	@echo 'make build    binary to ./$(BIN), with symbols (for debuggers and profilers)'
	@echo 'make release  stripped static binary to ./$(BIN), what to ship'
	@echo 'make test     fetch the test deps, go test -race ./..., each fuzz target for $(TEST_FUZZTIME); says what could not run'
	@echo '              (PKGS=./broker/log/... for some packages only)'
	@echo 'make test-long  the cluster fault scenarios at full length (1M records through leader kills) and the loader'"'"'s'
	@echo '              loads at full size, the 200 MB throttled move, 5 times each (COUNT=1 once; LONG=cluster|throttle|loader one part)'
	@echo 'make fuzz     every Fuzz* target for FUZZTIME each (now $(FUZZTIME))'
	@echo 'make bench    every benchmark, with allocations'
	@echo 'make verify   gofmt, go vet, go mod tidy clean, generated docs up to date'
	@echo 'make docs     regenerate docs/config-reference.md and docs/cli-reference.md'
	@echo 'make demo     build, run broker, tracker, scheduled loads and simulated traffic (tributary dev --generate)'
	@echo 'make clean    remove ./bin and ./tributary-data'

build:
	$(GO) build -trimpath -ldflags '-X main.version=$(VERSION)' -o $(BIN) ./cmd/tributary

# What to ship: as the container image builds it (deploy/docker/Dockerfile),
# without the symbol table and DWARF (-s -w), static (CGO_ENABLED=0). Panics
# still print file:line stack traces (those come from pclntab, which -s
# keeps); a debugger or a profiler needs `make build`'s binary instead.
# 55.3 MB against make build's 79.9 MB (Go 1.26.8, linux/amd64).
release:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $(BIN) ./cmd/tributary
	@ls -l $(BIN) | awk '{ printf "%s: %.1f MB\n", $$NF, $$5 / 1e6 }'

# Fetch what the tests need (Kafka's jars, the Python and Node packages),
# run every test, then each fuzz target for a few seconds beyond its seeds
# (`make fuzz` fuzzes longer); the last line lists what could not run.
# scripts/test.sh says how.
test:
	@GO='$(GO)' PKGS='$(PKGS)' TEST_FUZZTIME='$(TEST_FUZZTIME)' bash scripts/test.sh

# The long forms, repeated: the fault scenarios of a replicated cluster
# (broker/cluster; what issue 5 asks before replication is called done;
# TestGroupSurvives covers the coordinator kills under classic, franz-go
# KIP-848 and Java KafkaConsumer KIP-848 members; the Java classic
# members' kill, a comparison, runs with LONG=groups, outside CI's parts),
# the 200 MB reassignment at a 1 MB/s throttle (issue 30; make test moves
# 12 MB at 3 MB/s), the loader's loads at the record counts issue 7
# names (make test runs a fifth of them) with its overlapping runs and
# Iceberg crash points and the compaction of 1,000 files on HDFS, the
# schema registry's 3-node leader kill,
# transactions on 3 nodes (Kafka Streams under 7 faults, the copier across
# restarts, 8 coordinator kills, the transactional checker with 10 producers
# under leader and coordinator kills and pauses for 2 minutes), the KIP-848
# group under kill -9 and its online migration with cooperative-sticky
# classic members too, and the
# Hadoop side (a killed YARN application, Kerberos tickets renewed and
# passed to load workers), and tiered storage's 5 GB through a 3-node
# cluster with a 100 MB local retention under leader kills and a minute's
# HDFS outage under a producer (issue 26).
# LONG=cluster, throttle, loader, registry, txn, groups, hadoop or tier runs
# one part only.
LONG ?= cluster throttle loader registry txn groups hadoop tier
test-long:
	@if [[ " $(LONG) " == *" cluster "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 3h -run 'TestFault|TestReplication|TestGroupSurvives|TestShareGroupSurvives|TestControlledShutdown' -v ./broker/cluster/; fi
	@if [[ " $(LONG) " == *" throttle "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 3h -run 'TestDynamicConfigsAndThrottledReassignment' -v ./broker/cluster/; fi
	@if [[ " $(LONG) " == *" loader "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 3h -run 'TestLoadHDFS|TestLoadCrashLoop|TestDataNodeDiesMidWrite|TestLoadRunsOverlap|TestLoadIcebergCrash' -v ./loader/ && \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 1h -run 'TestCompactHDFS|TestDecodeBudget' -v ./formats/iceberg/; fi
	@if [[ " $(LONG) " == *" registry "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 1h -run 'TestClusterForwarding' -v ./registry/; fi
	@if [[ " $(LONG) " == *" txn "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 3h -run 'TestKafkaStreamsExactlyOnceCluster|TestTransactionalMessageCopierRestarts|TestTransactionsCluster|TestTransactionsCheckerFaults' -v ./broker/txn/; fi
	@if [[ " $(LONG) " == *" groups "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 1h -run 'TestGroupsKIP848Crash|TestGroupsKIP848Migration' -v ./broker/conformance/ && \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 1h -run 'TestClassicJavaCoordinatorKillComparison' -v ./broker/cluster/; fi
	@if [[ " $(LONG) " == *" hadoop "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 3h -run 'TestYARNApplicationKilled|TestYARNLoadTwelvePartitions|TestKerberosProcessExecutor' -v ./jobs/ && \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),5) -timeout 1h -run 'TestKerberosTicketRenewal' -v ./internal/fsys/; fi
	@if [[ " $(LONG) " == *" tier "* ]]; then set -x; \
	TRIBUTARY_TEST_LONG=1 $(GO) test -race -count=$(or $(COUNT),1) -timeout 4h -run 'TestTieredClusterLeaderKills|TestTieredHDFSOutage' -v ./broker/tier/; fi

# Fuzz targets are found, not listed: `go test -list` prints each package's
# Fuzz* names, then "ok <package>". Go fuzzes one target at a time.
fuzz:
	@set -o pipefail; out=$$($(GO) test -list '^Fuzz' $(or $(PKGS),./...)) || { echo "$$out"; exit 1; }; \
	targets=$$(echo "$$out" | awk '/^Fuzz/ { t[n++] = $$1; next } \
		/^ok / { for (i = 0; i < n; i++) print $$2 " " t[i]; n = 0 }'); \
	if [ -z "$$targets" ]; then echo 'fuzz: no Fuzz targets'; exit 0; fi; \
	echo "$$targets" | while read -r pkg target; do \
		echo "== $$pkg $$target for $(FUZZTIME)"; \
		log=$$(mktemp); \
		if $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) "$$pkg" </dev/null 2>&1 | tee "$$log"; then \
			rm -f "$$log"; continue; \
		fi; \
		if ! grep -q 'Failing input written' "$$log" && grep -q 'context deadline exceeded' "$$log"; then \
			echo "fuzz: $$target: the time ran out while Go was minimizing a new input; no failing input was found"; \
			rm -f "$$log"; continue; \
		fi; \
		rm -f "$$log"; exit 1; \
	done

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# go mod tidy -diff changes nothing and fails if tidying would change go.mod
# or go.sum, tracked in git or not.
verify:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo 'gofmt -l: not formatted:'; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags testhooks ./...
	$(GO) mod tidy -diff
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) run ./cmd/tributary docs "$$tmp" || exit 1; \
	for f in config-reference.md cli-reference.md; do \
		diff -u "docs/$$f" "$$tmp/$$f" || { echo "docs/$$f is stale: run make docs"; exit 1; }; \
	done

# The configuration and CLI references, generated from the broker's
# property tables and the commands' flags and help.
docs:
	$(GO) run ./cmd/tributary docs docs

demo: build
	./$(BIN) dev --generate

clean:
	rm -rf bin tributary-data

# Tributary against Apache Kafka 4.4.0, side by side on this machine (issue
# 11); about 15 minutes. scripts/bench-vs-kafka.sh says what it runs;
# WORKLOADS picks workloads: `make bench-compare WORKLOADS=tls` measures what
# TLS costs per GB on both (issue 21).
bench-compare:
	bash scripts/bench-vs-kafka.sh

# The tracker's HTTP collector under load with a real broker, ack=spool and
# ack=broker (issue 9); about 3 minutes. scripts/bench-tracker.sh says what
# it runs; CONNS, DURATION, REPS and MODES change it.
.PHONY: bench-tracker
bench-tracker:
	bash scripts/bench-tracker.sh
