# Holdpoint developer commands. Everything installs into local venvs from pinned files.
# Lambda's runtime (template.yaml: python3.13), for every venv: the tests run the version the functions
# run, and `sam build` runs the `python3.13` it finds on PATH (.venv-sam's bin leads PATH there). A pyenv
# 3.13 is taken when python3.13 is not on PATH.
PYTHON313 ?= $(shell command -v python3.13 >/dev/null 2>&1 && python3.13 -c '' 2>/dev/null && command -v python3.13 || \
	PYENV_VERSION=$$(pyenv latest 3.13 2>/dev/null) pyenv which python3.13 2>/dev/null)
PYTHON ?= $(PYTHON313)
VENV := .venv
VENV_SAM := .venv-sam
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SAM_STAMP := $(VENV_SAM)/.installed
LOCAL_PATH := $(CURDIR)/local:$(CURDIR)/layers/core:$(CURDIR)/sdk/src:$(CURDIR)

.PHONY: venv sdk-venvs system-packages test test-unit serve demo smoke deploy lint sam-check clean

venv: $(STAMP)

# The stamp depends on the pinned files, so editing a pin reinstalls; otherwise `make venv` is a no-op.
# The SDK goes in editable (its code is this checkout's), which puts the `holdpoint` command in .venv/bin.
$(STAMP): requirements.txt requirements-dev.txt sdk/pyproject.toml
	@test -n "$(PYTHON)" || { echo "the venvs need python3.13 (Lambda's runtime); install it or set PYTHON" >&2; exit 1; }
	test -x $(VENV)/bin/python3.13 || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e ./sdk
	touch $(STAMP)

# The SDK's integrations, each in a venv of its own (the frameworks' pins do not install together, nor
# with the server's: strands-agents wants mcp<2.2, openai-agents websockets<16): the SDK installed
# editable with its extra and `receipts` (the examples' --check-receipts), under the pins the tests ran
# (sdk/constraints/), and what each example needs.
SDK_VENVS := .venv-sdk/strands .venv-sdk/langgraph .venv-sdk/openai-agents
EXAMPLE_NEEDS_langgraph := langgraph-checkpoint-sqlite
sdk-venvs: $(foreach v,$(SDK_VENVS),$(v)/.installed)

.venv-sdk/%/.installed: sdk/pyproject.toml sdk/constraints/%.txt
	@test -n "$(PYTHON)" || { echo "the venvs need python3.13 (Lambda's runtime); install it or set PYTHON" >&2; exit 1; }
	rm -rf .venv-sdk/$*
	$(PYTHON) -m venv .venv-sdk/$*
	.venv-sdk/$*/bin/python -m pip install --quiet -c sdk/constraints/$*.txt -e "./sdk[$*,receipts]" $(EXAMPLE_NEEDS_$*)
	touch $@

# Debian's chromium and node/npm for the page and AG-UI tests: installed with apt-get when missing,
# or one line naming them when this machine cannot install (not root, no apt-get).
system-packages:
	@bash local/system-packages.sh

# Every pytest run (pytest-randomly) shuffles the modules and the tests in each, from a new seed
# each time, printed at the end (`--randomly-seed=N`): SEED=N replays that order (`make test SEED=N`,
# `make test-unit SEED=N`); `-p no:randomly` runs the files' own order.
SEED ?=
ORDER = $(if $(SEED),--randomly-seed=$(SEED))

# Everything: unit, integration (in-process, exhaustive), e2e and security (over HTTP on the local stack),
# and the container tier (tests/sam/: `sam build`'s artifact run by `sam local invoke`, so it needs .venv-sam).
# Spread over TEST_WORKERS processes by file, as the fast tier is (below): every test owns its stack,
# moto server, ports and containers, so two files run side by side as they would alone. TEST_WORKERS=0: one
# process, the whole order in it. The 30 slowest tests are listed at the end, to see where the time goes.
TEST_WORKERS ?= 2
test: system-packages venv sdk-venvs $(SAM_STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=30 $(ORDER)

# The fast tier (README, "Tests"): the core, the services and the rules R1-R17/A1-A6 on the in-memory
# store, the store contract on both stores, the DynamoDB adapter's own tests on moto's in-process AWS;
# no server. The bad-input fuzz runs 25 examples a route here, 150 in `make test`. Spread over
# UNIT_WORKERS processes (pytest-xdist, one per core; each test has its own moto or in-memory store and
# its servers bind free ports; a file's tests stay in one process, so a module-scoped fixture is built
# once; every process shuffles with the one seed, so they agree on the order and a file stays whole).
# Each process starts pytest and collects the tier, so the start is kept short: bytecode is
# cached even where PYTHONDONTWRITEBYTECODE is set (pytest's rewritten test modules included, else
# recompiled by every process of every run), and schemathesis's pytest plugin, which no unit test
# uses, is not loaded. UNIT_WORKERS=0: one process.
UNIT_WORKERS ?= 2
test-unit: venv
	PYTHONDONTWRITEBYTECODE= HOLDPOINT_FUZZ_EXAMPLES=25 $(PY) -m pytest -q -p no:schemathesis -n $(UNIT_WORKERS) --dist loadfile $(ORDER) tests/unit

# INVOKE=sam: every function runs as `sam build` built it, in its Lambda-shaped container behind
# `sam local start-lambda` (Docker, the SAM CLI venv); the default runs the handlers in process.
INVOKE ?= process
INVOKE_NEEDS = $(if $(filter sam,$(INVOKE)),system-packages $(SAM_STAMP))

serve: venv $(INVOKE_NEEDS)
	HOLDPOINT_INVOKE=$(INVOKE) PYTHONPATH=$(LOCAL_PATH) $(PY) -m holdpoint_local.serve

demo: venv $(INVOKE_NEEDS)
	HOLDPOINT_INVOKE=$(INVOKE) PYTHONPATH=$(LOCAL_PATH) $(PY) -m holdpoint_local.demo

# The seed scenario (park, resume, approve and decline) against any deployment, in one line:
# `make smoke` against `make serve`; `make smoke URL=https://... KEY=hp_... WORKER_URL=https://...`
# against a cloud stack (its worker must be reachable from AWS; README, "First run on AWS").
smoke: venv
	URL="$(URL)" KEY="$(KEY)" WORKER_URL="$(WORKER_URL)" WORKER_SECRET_REF="$(WORKER_SECRET_REF)" \
		PYTHONPATH=$(LOCAL_PATH) $(PY) -m holdpoint_local.deploy.smoke

# The resume function's check of a resume body, made from its one declaration (http/bodies.ResumeBody);
# tests/unit/test_resume_function.py fails while the file is not current.
.PHONY: resume-shape
resume-shape: venv
	PYTHONPATH=$(CURDIR)/layers/core $(PY) -c "from holdpoint.http.bodies import resume_shape_module as m; \
		open('layers/core/holdpoint/http/resume_shape.py', 'w').write(m())"

# ruff (style, complexity <= 15, no real clock in the core), the architecture contracts
# (import-linter, [tool.importlinter] in pyproject.toml) and the type checker (strict on the core).
lint: venv sdk-venvs
	$(PY) -m ruff check .
	PYTHONPATH=$(CURDIR)/layers/core:$(CURDIR)/sdk/src:$(CURDIR)/local $(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(foreach i,strands:strands langgraph:langgraph openai_agents:openai-agents,\
		MYPYPATH=sdk/src:layers/core:examples $(VENV)/bin/mypy --python-executable .venv-sdk/$(word 2,$(subst :, ,$(i)))/bin/python \
		sdk/src/holdpoint_sdk/integrations/$(word 1,$(subst :, ,$(i))).py examples/$(word 1,$(subst :, ,$(i)))_approval.py &&) true

$(SAM_STAMP): requirements-sam.txt
	@test -n "$(PYTHON)" || { echo "the venvs need python3.13 (Lambda's runtime); install it or set PYTHON" >&2; exit 1; }
	test -x $(VENV_SAM)/bin/python3.13 || { rm -rf $(VENV_SAM); $(PYTHON) -m venv $(VENV_SAM); }
	$(VENV_SAM)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_SAM)/bin/python -m pip install --quiet -r requirements-sam.txt
	touch $(SAM_STAMP)

# sam build resolves the layer for arm64 from manylinux wheels, so it needs no container.
SAM_ENV := SAM_CLI_TELEMETRY=0 PATH=$(CURDIR)/$(VENV_SAM)/bin:$$PATH
sam-check: $(SAM_STAMP)
	$(SAM_ENV) $(VENV_SAM)/bin/sam validate --lint --region us-east-1
	$(SAM_ENV) $(VENV_SAM)/bin/sam build --region us-east-1

# First run on AWS (README): sam build, sam deploy (guided the first time), the API URL, and the
# first operator key for $(TENANT). Needs AWS credentials; tear down with `sam delete`.
STACK ?= holdpoint
TENANT ?= default
deploy: venv $(SAM_STAMP)
	$(SAM_ENV) PYTHONPATH=$(LOCAL_PATH) $(PY) -m holdpoint_local.deploy.deploy --sam $(CURDIR)/$(VENV_SAM)/bin/sam \
		--stack-name $(STACK) --tenant $(TENANT) $(if $(REGION),--region $(REGION)) $(if $(NEW_KEY),--new-key)

clean:
	rm -rf $(VENV) $(VENV_SAM) .venv-sdk .aws-sam .pytest_cache .ruff_cache

# Benchmarks (bench/, figures against targets in docs/PERFORMANCE.md, the runs in bench/README.md): requests and bytes per engine
# step at 10/100/1000-node trees, cold start per handler (in a venv with only requirements.txt),
# and the cost model built on the former. The local-stack figures run at N=200 resumes (about
# 1 min), 1,000 parked sessions (about 3 min), the event stream and live events at N=200 and the external runs
# at N=20; the whole run took 26.5 min on 2 cores shared with other work (bench/README.md, "The latest full
# run"). `make bench-quick` prints every figure at small sizes in under 3 minutes, for use before a commit.
VENV_RUNTIME := .venv-runtime
RUNTIME_STAMP := $(VENV_RUNTIME)/.installed
BENCH_RESUMES ?= 200
BENCH_PARKED ?= 1000
BENCH_EVENTS ?= 200
BENCH_EVENT_ARGS ?=
BENCH_LIVE_ARGS ?= --n 200 --subscribers 1000
BENCH_EXTERNAL ?= 20
BENCH_SIZES ?= 10,100,1000
BENCH_HISTORY ?= 10,100
BENCH_PAIRS ?= 9
BENCH_LOCAL_ARGS ?=
BENCH_JSON ?= $(or $(TMPDIR),/tmp)/holdpoint-bench-ddb.json
# Each script appends its issue figures (`FIGURE ...: value; target ...`) here; printed last.
BENCH_SUMMARY ?= $(or $(TMPDIR),/tmp)/holdpoint-bench-figures.txt
BENCH_ENV = PYTHONPATH=$(LOCAL_PATH) HOLDPOINT_BENCH_SUMMARY=$(BENCH_SUMMARY)
.PHONY: bench bench-quick venv-runtime capacity

# The capacity model (docs/CAPACITY.md): which quota breaks first at 1x..1,000x; flags via CAPACITY_ARGS.
CAPACITY_ARGS ?=
capacity: venv
	$(PY) bench/capacity.py $(CAPACITY_ARGS)

# What a Lambda has: the runtime dependencies alone, so the cold-start bench imports nothing the dev venv adds.
venv-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): requirements.txt
	test -x $(VENV_RUNTIME)/bin/python3.13 || { rm -rf $(VENV_RUNTIME); $(PYTHON) -m venv $(VENV_RUNTIME); }
	$(VENV_RUNTIME)/bin/python -m pip install --quiet -r requirements.txt
	touch $(RUNTIME_STAMP)

bench: venv venv-runtime
	rm -f $(BENCH_SUMMARY)
	$(BENCH_ENV) $(PY) bench/ddb_per_step.py --sizes $(BENCH_SIZES) --history-sizes $(BENCH_HISTORY) --json $(BENCH_JSON)
	HOLDPOINT_BENCH_SUMMARY=$(BENCH_SUMMARY) $(PY) bench/cold_start.py --pairs $(BENCH_PAIRS) --python $(VENV_RUNTIME)/bin/python
	$(BENCH_ENV) $(PY) bench/cost_model.py --from $(BENCH_JSON)
	$(BENCH_ENV) $(PY) bench/capacity.py --from $(BENCH_JSON) $(CAPACITY_ARGS)
	$(BENCH_ENV) $(PY) bench/resume_latency.py --n $(BENCH_RESUMES) $(BENCH_LOCAL_ARGS)
	$(BENCH_ENV) $(PY) bench/parked_sessions.py --n $(BENCH_PARKED) $(BENCH_LOCAL_ARGS)
	$(BENCH_ENV) $(PY) bench/event_stream.py --n $(BENCH_EVENTS) $(BENCH_EVENT_ARGS)
	$(BENCH_ENV) $(PY) bench/live_latency.py $(BENCH_LIVE_ARGS)
	$(BENCH_ENV) $(PY) bench/external_runs.py --n $(BENCH_EXTERNAL)
	@echo; echo "=== issue 13 figures, each next to its target ==="; cat $(BENCH_SUMMARY)

bench-quick:
	$(MAKE) --no-print-directory bench BENCH_SIZES=10,100 BENCH_HISTORY=10 BENCH_PAIRS=7 BENCH_RESUMES=20 \
		BENCH_PARKED=40 BENCH_LOCAL_ARGS="--warmup 2" BENCH_EVENTS=20 BENCH_EVENT_ARGS="--resumes 5 --no-idle" \
		BENCH_LIVE_ARGS="--n 20 --subscribers 100 --idle-secs 2" BENCH_EXTERNAL=3

# `make help`: each command in one line (README.md, "The two commands", has the longer list).
.PHONY: help
help:
	@printf '%s\n' \
	  'make demo         the seed example (approved, then declined) on the embedded local stack' \
	  'make serve        the local stack until Ctrl-C: API, inbox page, WebSocket API (HOLDPOINT_PORT, default 8787)' \
	  'make test         the whole suite (installs what it needs: venvs, chromium, node)' \
	  'make test-unit    the fast tier, no server' \
	  'make lint         ruff, the import contracts, mypy' \
	  'make sam-check    sam validate --lint and sam build' \
	  'make smoke        the seed scenario against a running deployment (URL=... KEY=...)' \
	  'make deploy       the first run on AWS (sam build, sam deploy, the first key)' \
	  'make bench        the performance figures (about 12 minutes)' \
	  'make bench-quick  the same figures at small sizes (under 3 minutes)' \
	  'make soak         sustained load with faults, invariants, then the knee (about 16 minutes)' \
	  'make soak-quick   the same at a small size (under 3 minutes)' \
	  'make soak-containers the soak on the built artifact in containers, killing them (about 20 minutes)' \
	  'make capacity     the capacity model' \
	  'make clean        remove the venvs and build output'

# The soak (bench/soak.py, docs/CAPACITY.md "Under sustained load"): open-loop approval sessions over
# HTTP on the local stack with AWS refusals and killed invocations injected, invariants checked from
# the table and the worker's log, then the rate stepped up to the knee. `make soak-quick`: the same
# FIGURE and INVARIANT lines at a small size, in under 3 minutes. A 60 s version is in `make test`.
# The rate is below the knee a 2-core machine holds (0.5-0.75/s, docs/CAPACITY.md) and the duration
# gives over 300 sessions, the count the memory and descriptor slopes are judged over.
SOAK_RATE ?= 0.4
SOAK_SECS ?= 800
SOAK_FAULTS ?= --faults 0.01 --kills 0.002
SOAK_KNEE ?= 0.5,0.75,1,1.5,2
.PHONY: soak soak-quick soak-containers
soak: venv
	$(BENCH_ENV) $(PY) bench/soak.py --rate $(SOAK_RATE) --duration $(SOAK_SECS) $(SOAK_FAULTS)
	$(BENCH_ENV) $(PY) bench/soak.py --knee $(SOAK_KNEE) --duration 60

# The soak on `sam build`'s artifact, every function in its container (INVOKE=sam), with the engine's or the
# notifier's container killed mid-invocation about every SOAK_CONTAINER_KILLS s, and SOAK_CONTAINER_CUTS of the
# chunks between the functions and AWS lost either way (about 1 % of calls); a slow rate, since every
# invocation crosses a container (about 20 minutes).
SOAK_CONTAINER_RATE ?= 0.05
SOAK_CONTAINER_SECS ?= 900
SOAK_CONTAINER_KILLS ?= 30
SOAK_CONTAINER_CUTS ?= 0.005
soak-containers: venv system-packages $(SAM_STAMP)
	$(BENCH_ENV) $(PY) bench/soak.py --invoke sam --rate $(SOAK_CONTAINER_RATE) --duration $(SOAK_CONTAINER_SECS) \
		--container-kills $(SOAK_CONTAINER_KILLS) --cut-calls $(SOAK_CONTAINER_CUTS)

soak-quick: venv
	$(BENCH_ENV) $(PY) bench/soak.py --rate 0.5 --duration 90 $(SOAK_FAULTS)
