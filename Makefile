# tunnelprobe: `make demo` runs the scan on the built-in lab, `make test` runs every test (as root).
SWIFT ?= swift
APT_PACKAGES := libpcap-dev unbound iproute2 nftables dnsperf tcpdump tshark libisal-dev iodine openvpn wireguard-go wireguard-tools nginx-light chromium
BIN := .build/debug/tunnelprobe

.PHONY: all deps build test demo bench clean

all: build

# Installs the Debian packages that are missing (needs root and the Debian archive).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build --product tunnelprobe

test: build
	TUNNELPROBE_BIN=$(CURDIR)/$(BIN) $(SWIFT) test

demo: build
	./scripts/demo.sh $(BIN)

bench: build
	./scripts/bench-scan.sh
	./scripts/bench-trace.sh

clean:
	rm -rf .build
