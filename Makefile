# wampscope: convenience targets around CMake/CTest for a Debian 12 machine.
#   make run    install what is missing, build (Release, build/) and run the router
#   make test   install what is missing, build with ASan+UBSan (Debug, build-test/), run every test
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
FUZZ_DIR := build-fuzz
FUZZ_TARGETS := fuzz_json fuzz_msgpack fuzz_rawsock fuzz_session
FUZZ_SECONDS ?= $(if $(CI),40,0)
# `make fuzz` alone runs 60 s per target when FUZZ_SECONDS is 0.
FUZZ_RUN_SECONDS = $(if $(filter-out 0,$(FUZZ_SECONDS)),$(FUZZ_SECONDS),60)
NPM_STAMP := $(NODE_DIR)/node_modules/.wampscope-npm-ci

# Debian 12 packages: toolchain, the four C libraries, Check, and the interop clients.
DEB_PACKAGES := build-essential cmake pkg-config libwebsockets-dev libmsgpack-dev \
	libjansson-dev libsodium-dev check python3 python3-autobahn python3-msgpack python3-nacl \
	nodejs npm openssl clang libclang-rt-14-dev

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

.PHONY: deps build run test test-build npm clean distclean format lint fuzz fuzz-build crashtest

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

# npm ci only when node_modules is missing or the lock file (or package.json) changed.
npm: $(NPM_STAMP)
$(NPM_STAMP): $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

test-build:
	cmake -S . -B $(TEST_DIR) -DCMAKE_BUILD_TYPE=Debug -DRT_SANITIZE=address,undefined \
		-DRT_WERROR=$(WERROR)
	cmake --build $(TEST_DIR) -j$(NPROC)

test: deps
	$(MAKE) --no-print-directory npm
	$(MAKE) --no-print-directory test-build
	$(SANITIZER_ENV) ctest --test-dir $(TEST_DIR) --output-on-failure -j2
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then $(MAKE) --no-print-directory fuzz; fi

# libFuzzer runs of the tests/fuzz targets (clang, ASan+UBSan, build-fuzz/). Each target starts
# from the committed seeds (tests/fuzz/corpus/<t>) and regressions, keeps what it discovers in
# build-fuzz/corpus/<t> (never in the source tree) and writes a crashing input to
# build-fuzz/crashes/<t>/: copy it into tests/fuzz/regressions/<t>/ with the fix, and every test
# build replays it from then on. FUZZ_SECONDS per target: 0 (off) in `make test` unless CI is set
# (then 40); `make fuzz FUZZ_SECONDS=3600` for a long run by hand.
fuzz-build:
	CC=clang cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_FUZZ=ON \
		-DRT_SANITIZE=address,undefined
	cmake --build $(FUZZ_DIR) -j$(NPROC) --target $(FUZZ_TARGETS)

fuzz: deps fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/crashes/$$t; \
		echo "fuzz: $$t for $(FUZZ_RUN_SECONDS) s"; \
		$(SANITIZER_ENV) $(FUZZ_DIR)/tests/fuzz/$$t -max_total_time=$(FUZZ_RUN_SECONDS) \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crashes/$$t/ \
			$(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t tests/fuzz/regressions/$$t \
			2>$(FUZZ_DIR)/$$t.log || { tail -n 60 $(FUZZ_DIR)/$$t.log; \
			echo "fuzz: $$t failed; the input is in $(FUZZ_DIR)/crashes/$$t/"; exit 1; }; \
		grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' $(FUZZ_DIR)/$$t.log; \
	done

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
	rm -rf $(BUILD_DIR) $(TEST_DIR) $(FUZZ_DIR)

distclean: clean
	rm -rf $(NODE_DIR)/node_modules

format:
	clang-format -i $(C_SOURCES)

lint:
	@command -v clang-format >/dev/null || { echo "lint: install clang-format (apt-get install clang-format)"; exit 1; }
	clang-format --dry-run -Werror $(C_SOURCES)
	@bad=$$(grep -rlE '#[[:space:]]*include[[:space:]]*[<"]libwebsockets\.h[>"]' $(C_DIRS) \
		--include='*.c' --include='*.h' | grep -vE '$(LWS_ALLOWED)' || true); \
	if [ -n "$$bad" ]; then \
		echo "lint: <libwebsockets.h> included outside router/rt_lws*, router/main.c, mgmt/ctl/:"; \
		echo "$$bad"; exit 1; \
	fi; \
	echo "lint: ok"
