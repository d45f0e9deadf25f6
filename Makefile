# Thin wrapper over CMake.  `make demo` builds and runs the demo;
# `make test` builds and runs every test.  Both first install the Debian
# packages they need when they are missing (tools/deps.sh, from the one list
# in tools/deps.txt; as root, else it prints the apt-get line and stops):
# `make demo` the build's, `make test` the tests' too (lavapipe, Open MPI,
# python3-torch, curl, wrk), so every test runs.  DEPS=0 skips that.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps deps-test build demo test clean install

all: build

DEPS ?= 1

deps:
	@if [ "$(DEPS)" != 0 ]; then sh tools/deps.sh $(CMAKE_FLAGS); fi

deps-test:
	@if [ "$(DEPS)" != 0 ]; then sh tools/deps.sh --test $(CMAKE_FLAGS); fi

# Configure every time (cheap) so new folders and options are picked up.
build: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/tport demo

test: deps-test build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
