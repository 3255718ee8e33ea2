# tunnelprobe: `make demo` runs the whole lab demo, `make test` runs every test (as root).
SWIFT ?= swift
APT_PACKAGES := libpcap-dev unbound knot-resolver iproute2 nftables dnsperf tcpdump tshark libisal-dev iodine openvpn wireguard-go wireguard-tools nginx-light microsocks chromium redsocks python3 knot-dnsutils openssl zmap ethtool
# The binary the lab tests and the demo run is the release build, the one users run: a debug build of
# the responder cannot answer a 4,000/s path stream on two cores, and its own drops would be blamed
# on the path under test.
BIN := .build/release/tunnelprobe

.PHONY: all deps build test check demo bench fuzz fuzz-smoke clean module-graph

all: build

# Installs the Debian packages that are missing (needs root and the Debian archive).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build -c release --product tunnelprobe

test: build
	# One suite at a time: the lab suites measure loss and timing, and running them side by side on two
	# cores makes the responder and the capture drop packets that the tests then (rightly) count.
	TUNNELPROBE_BIN=$(CURDIR)/$(BIN) $(SWIFT) test --no-parallel

# The edit loop: every test that needs no root, no lab and no engine. Commands run in process
# (Tests/CommandLineTests, through `TunnelProbe.execute`); the debug binary is built for the few
# suites that start it (BinarySmokeTests, the signal tests of `path` and `serve`)
# (about 600 tests: about 45 s once built on an idle 2-core machine, 2 to 5 minutes on a busy one; no apt
# packages needed beyond libpcap-dev and libisal-dev). Suites behind a lab gate (Tests/TestSupport LabGate:
# root, a tool, or an idle machine) disable themselves under TUNNELPROBE_QUICK_CHECK=1; no suite is named here.
check:
	SWIFT=$(SWIFT) ./scripts/module-graph.sh --check
	$(SWIFT) build --build-tests
	TUNNELPROBE_QUICK_CHECK=1 TUNNELPROBE_BIN=$(CURDIR)/.build/debug/tunnelprobe $(SWIFT) test --skip-build

# docs/MODULE-GRAPH.md from Package.swift (`make check` fails while the committed graph is stale).
module-graph:
	SWIFT=$(SWIFT) ./scripts/module-graph.sh

# The fuzzing campaign: every libFuzzer target (Fuzz/, scripts/fuzz.sh) for FUZZ_SECONDS each; a
# crash is saved under Fuzz/.work/crashes/ and fails the run. CI runs the short smoke.
FUZZ_SECONDS ?= 60
fuzz: deps
	./scripts/fuzz.sh $(FUZZ_SECONDS)

fuzz-smoke: deps
	./scripts/fuzz.sh 15

demo: build
	$(BIN) lab demo

bench: build
	./scripts/bench-scan.sh
	./scripts/bench-scan-overload.sh
	./scripts/bench-rank.sh
	./scripts/bench-monitor.sh
	./scripts/bench-path.sh
	./scripts/bench-trace.sh
	./scripts/bench-index.sh
	./scripts/bench-sweep.sh
	./scripts/bench-transports.sh
	./scripts/bench-forward.sh

clean:
	rm -rf .build
