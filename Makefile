# wampscope: convenience targets around CMake/CTest for a Debian 12 machine.
#   make run    install what is missing, build (Release, build/) and run the router
#   make test   install what is missing, build with ASan+UBSan (Debug, build-test/), run every test
#   make install  build (Release) and install under PREFIX (default /usr/local; DESTDIR honoured)
#   make deb      build the Debian package (Release, prefix /usr, build-deb/wampscope_*.deb)
# Other targets: deps, build, clean, distclean, format, lint, fuzz, crashtest. Extra router
# arguments: ARGS="...".

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

NPROC := $(shell nproc 2>/dev/null || echo 2)
BUILD_DIR := build
TEST_DIR := build-test
NODE_DIR := tests/interop/node
BROWSER_DIR := tests/browser
FUZZ_DIR := build-fuzz
DEB_DIR := build-deb
PREFIX ?= /usr/local
FUZZ_TARGETS := fuzz_json fuzz_msgpack fuzz_cbor fuzz_transcode fuzz_rawsock fuzz_session fuzz_http \
	fuzz_ws fuzz_http1 fuzz_wire
FUZZ_SECONDS ?= $(if $(CI),40,0)
# `make fuzz` alone runs 60 s per target when FUZZ_SECONDS is 0.
FUZZ_RUN_SECONDS = $(if $(filter-out 0,$(FUZZ_SECONDS)),$(FUZZ_SECONDS),60)
NPM_STAMP := $(NODE_DIR)/node_modules/.wampscope-npm-ci
BROWSER_NPM_STAMP := $(BROWSER_DIR)/node_modules/.wampscope-npm-ci

# Debian 12 packages: toolchain, the C libraries, Check, the interop clients, NATS (the C client
# for the cluster link, the server for its e2e tests), the metrics checkers of test_metrics.py
# (prometheus_client's parser; promtool from prometheus), the browser of the trace viewer's tests
# and libfaketime (a cluster node whose wall clock is off, in the merged-reading tests).
DEB_PACKAGES := build-essential cmake pkg-config libwebsockets-dev libmsgpack-dev \
	libjansson-dev libsodium-dev check python3 python3-autobahn python3-msgpack python3-nacl \
	python3-cbor2 python3-prometheus-client prometheus nodejs npm openssl clang libclang-rt-14-dev \
	libnats-dev nats-server chromium libfaketime

# root runs apt-get directly; anyone else goes through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# -Werror only in CI (STYLE §9): a newer compiler may warn where CI's does not.
ifdef CI
WERROR := ON
else
WERROR := OFF
endif

SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 CK_TIMEOUT_MULTIPLIER=4

C_DIRS := wamp tracing router mgmt tests
C_SOURCES = $(shell find $(C_DIRS) -type f \( -name '*.c' -o -name '*.h' \) \
	-not -path '*/node_modules/*' 2>/dev/null | sort)
# Only the lws adapter, main.c and the management CLI may include <libwebsockets.h> (STYLE §1).
LWS_ALLOWED := ^(router/rt_lws[^/]*|router/main\.c|mgmt/ctl/.*)$$
# No source file in router/ or tracing/ is longer than MAX_FILE_LINES lines, so that each stays
# one area a reader can take in. A file listed in LONG_FILES_ALLOWED may be longer (none is).
MAX_FILE_LINES := 1000
LONG_FILES_ALLOWED :=

.PHONY: deps build run test test-build npm chromium-warm clean distclean format lint fuzz fuzz-build install deb crashtest

deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
		case "$$p" in \
		npm) command -v npm >/dev/null 2>&1 && continue ;; \
		nodejs) command -v node >/dev/null 2>&1 && continue ;; \
		esac; \
		status=$$(dpkg-query -W -f='$${db:Status-Status}' "$$p" 2>/dev/null || true); \
		[ "$$status" = installed ] || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else \
		echo "make deps: all Debian packages present"; \
	fi

build:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j$(NPROC)

run: deps build
	exec $(BUILD_DIR)/router/wampscope $(ARGS)

# Install rules: configs/dist/packaging.cmake. PREFIX is a configure-time setting (the unit and
# the config path depend on it), so it is passed to cmake here.
install:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --build $(BUILD_DIR) -j$(NPROC)
	cmake --install $(BUILD_DIR)

# The Debian package: its own build directory (Release, no tests, prefix /usr so that the
# config lands in /etc/wampscope); dependencies from dpkg-shlibdeps (CPack's DEB generator).
deb:
	cmake -S . -B $(DEB_DIR) -DCMAKE_BUILD_TYPE=Release -DRT_BUILD_TESTS=OFF \
		-DCMAKE_INSTALL_PREFIX=/usr
	cmake --build $(DEB_DIR) -j$(NPROC)
	cd $(DEB_DIR) && cpack -G DEB
	@ls -1 $(DEB_DIR)/wampscope_*.deb

# npm ci only when node_modules is missing or the lock file (or package.json) changed.
# tests/browser: puppeteer-core (drives the system chromium; it never downloads a browser) and
# the DevTools trace engine.
npm: $(NPM_STAMP) $(BROWSER_NPM_STAMP)
$(NPM_STAMP): $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@
$(BROWSER_NPM_STAMP): $(BROWSER_DIR)/package-lock.json $(BROWSER_DIR)/package.json
	cd $(BROWSER_DIR) && npm ci --no-audit --no-fund
	touch $@

test-build:
	cmake -S . -B $(TEST_DIR) -DCMAKE_BUILD_TYPE=Debug -DRT_SANITIZE=address,undefined \
		-DRT_WERROR=$(WERROR)
	cmake --build $(TEST_DIR) -j$(NPROC)

# One headless start of chromium before the browser tests: the first start on a fresh machine
# builds the font cache and reads the browser from disk, which under the load of the other tests
# has taken longer than puppeteer's launch timeout. A failure here is reported, not fatal: the
# browser tests then fail with the reason.
chromium-warm:
	@profile=$$(mktemp -d); \
	if timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$$profile" --dump-dom about:blank >/dev/null 2>&1; then \
		echo "chromium-warm: chromium started"; \
	else echo "chromium-warm: chromium did not start headless (the browser tests will say why)"; fi; \
	rm -rf "$$profile"

test: deps
	$(MAKE) --no-print-directory npm
	$(MAKE) --no-print-directory test-build
	$(MAKE) --no-print-directory chromium-warm
	$(SANITIZER_ENV) ctest --test-dir $(TEST_DIR) --output-on-failure -j2
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then $(MAKE) --no-print-directory fuzz; fi

# libFuzzer runs of the tests/fuzz targets (clang, ASan+UBSan, build-fuzz/). Each target starts
# from the committed seeds (tests/fuzz/corpus/<t>) and regressions, keeps what it discovers in
# build-fuzz/corpus/<t> (never in the source tree) and writes a crashing input to
# build-fuzz/crashes/<t>/: copy it into tests/fuzz/regressions/<t>/ with the fix, and every test
# build replays it from then on. The targets run NPROC at a time (tests/fuzz/run_target.sh).
# FUZZ_SECONDS per target: 0 (off) in `make test` unless CI is set (then 40); `make fuzz
# FUZZ_SECONDS=3600` for a long run by hand.
fuzz-build:
	CC=clang cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_FUZZ=ON \
		-DRT_SANITIZE=address,undefined
	cmake --build $(FUZZ_DIR) -j$(NPROC) --target $(FUZZ_TARGETS)

fuzz: deps fuzz-build
	@echo "fuzz: $(words $(FUZZ_TARGETS)) targets, $(FUZZ_RUN_SECONDS) s each, $(NPROC) at a time"
	@printf '%s\n' $(FUZZ_TARGETS) | $(SANITIZER_ENV) xargs -P $(NPROC) -I{} \
		tests/fuzz/run_target.sh $(FUZZ_DIR) {} $(FUZZ_RUN_SECONDS)

# Crash-consistency harness of persisted traces (tests/crash/README.md): SECONDS of writers
# killed with SIGKILL, injected write/fsync failures and damaged files, each followed by a reopen
# and the invariants (ASan+UBSan build, build-test/). `make test` runs 10 s of it
# (crash_persist_short); `make crashtest SECONDS=3600` for a long run by hand. Exit 1 on a
# violation (the seed and the iteration's files are printed).
SECONDS ?= 600
crashtest:
	cmake -S . -B $(TEST_DIR) -DCMAKE_BUILD_TYPE=Debug -DRT_SANITIZE=address,undefined \
		-DRT_WERROR=$(WERROR)
	cmake --build $(TEST_DIR) -j$(NPROC) --target crash_persist
	$(SANITIZER_ENV) nice -n 10 $(TEST_DIR)/tests/crash/crash_persist --seconds $(SECONDS)

clean:
	rm -rf $(BUILD_DIR) $(TEST_DIR) $(FUZZ_DIR) $(DEB_DIR)

distclean: clean
	rm -rf $(NODE_DIR)/node_modules $(BROWSER_DIR)/node_modules

format:
	clang-format -i $(C_SOURCES)

lint:
	@command -v clang-format >/dev/null || { echo "lint: install clang-format (apt-get install clang-format)"; exit 1; }
	clang-format --dry-run -Werror $(C_SOURCES)
	@long=""; \
	for f in $$(find router tracing -type f \( -name '*.c' -o -name '*.h' \) | sort); do \
		n=$$(wc -l < "$$f"); \
		case " $(LONG_FILES_ALLOWED) " in *" $$f "*) continue ;; esac; \
		[ "$$n" -le $(MAX_FILE_LINES) ] || long="$$long $$f ($$n lines)"; \
	done; \
	if [ -n "$$long" ]; then \
		echo "lint: longer than $(MAX_FILE_LINES) lines (split it, or list it in LONG_FILES_ALLOWED with a reason):$$long"; \
		exit 1; \
	fi
	python3 tests/lint/module_cycles.py router tracing
	python3 tests/lint/long_functions.py router tracing wamp mgmt
	@bad=$$(grep -rlE '#[[:space:]]*include[[:space:]]*[<"]libwebsockets\.h[>"]' $(C_DIRS) \
		--include='*.c' --include='*.h' | grep -vE '$(LWS_ALLOWED)' || true); \
	if [ -n "$$bad" ]; then \
		echo "lint: <libwebsockets.h> included outside router/rt_lws*, router/main.c, mgmt/ctl/:"; \
		echo "$$bad"; exit 1; \
	fi; \
	echo "lint: ok"
