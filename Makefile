# Kozel Arena: `make demo` and `make test` set everything up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The engine's hot modules, the SDK's search, the analysis and the referee's core compiled with mypyc
# (engine/build_native.py); rebuilt when a source of any changes. Without a C compiler all run
# as pure Python.
NATIVE := $(VENV)/.native
ENGINE_SOURCES := $(wildcard engine/kozel/engine/*.py clients/python/kozel/sdk/*.py \
  engine/kozel/analysis/*.py server/kozel/core/*.py) engine/build_native.py

.PHONY: demo test lint fix setup bench clean lock proto native

$(STAMP): pyproject.toml requirements.lock
	@echo "setup: $(VENV) with the pinned packages of requirements.lock (about a minute; once)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# buf (protobuf lint) from the npm registry, pinned by proto/package-lock.json.
proto/node_modules/.installed: proto/package.json proto/package-lock.json
	cd proto && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(NATIVE): $(STAMP) $(ENGINE_SOURCES)
	@echo "setup: compiling the engine, the SDK's search and the referee's core with mypyc" \
	  "(1 to 2 minutes; again only when they change)"
	$(BIN)/python engine/build_native.py
	touch $(NATIVE)

setup: $(STAMP) $(NATIVE)

# Build the compiled engine again, whatever the stamps say.
native: $(STAMP)
	$(BIN)/python engine/build_native.py
	touch $(NATIVE)

demo: setup
	@echo "demo: a referee and four house bots play nine matches (about 10 s)"
	$(BIN)/kozel demo

test: lint setup proto/node_modules/.installed
	cd proto && npx --no-install buf lint
	proto/check-breaking.sh
	$(BIN)/kozel vectors check -q tests/vectors
	$(BIN)/python -m pytest -n 2 -q --durations=20

# Ruff (lint and format check) and mypy (strict on kozel.engine and kozel.core); settings in
# pyproject.toml. `make fix` applies ruff's safe fixes, lists what is left, and formats.
lint: $(STAMP)
	@status=0; \
	echo "ruff check"; $(BIN)/ruff check --no-fix . || status=1; \
	echo "ruff format --check"; $(BIN)/ruff format --check . || status=1; \
	echo "mypy"; $(BIN)/mypy || status=1; \
	exit $$status

fix: $(STAMP)
	$(BIN)/ruff check --fix --exit-zero .
	$(BIN)/ruff format .

bench: setup
	$(BIN)/kozel bench engine

# Regenerate the pinned lock files from pyproject.toml (needs network), with every artifact's
# hash (pip then installs them in hash-checking mode). requirements.lock has the dev and env
# extras (make setup, CI, the image's build venv; not `train`); requirements-runtime.lock is the
# image's runtime subset (no extra), constrained to the same pins. uv keeps the pins already in an output file unless
# pyproject.toml changes them.
lock:
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra env --python-version 3.11 \
	  --generate-hashes -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 --generate-hashes \
	  -c requirements.lock -o requirements-runtime.lock

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache build/native \
	  engine/kozel/engine/_native clients/python/kozel/sdk/_native server/kozel/core/_native \
	  engine/kozel/analysis/_native

# Regenerate the Python stubs in clients/python/kozel/v1 from proto/ (committed; a test checks
# they are current).
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I proto --python_out=clients/python \
	  --grpc_python_out=clients/python --pyi_out=clients/python proto/kozel/v1/*.proto
