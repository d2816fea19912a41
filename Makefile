# clusterforge — every target creates .venv on its own when it is missing.
ENV ?= lab
ENGINE ?= pyinfra
PY := .venv/bin/python
CF := .venv/bin/clusterforge
INV := inventories/$(ENV)

.PHONY: deps test-deps venv test test-long test-all test-fast lint check schema docs bench deploy deploy-vars plan render validate lab-up lab-down lab-status clean

# Debian packages of the lab and the deploy tests (podman, ibsim, OpenSM, ...): installed when
# missing and we are root; otherwise say what to run. Idempotent and quick when all are there.
# `make deploy` needs them only for a lab (ENV=lab, ENV=lab-* or LAB=1): a machine that drives a real cluster
# gets no lab package.
deps:
	@if [ "$$(id -u)" = 0 ]; then sh scripts/lab-deps.sh; \
	else echo "not root: run 'sudo sh scripts/lab-deps.sh' once for the lab"; fi

venv: .venv/.stamp
.venv/.stamp: pyproject.toml
	python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -e '.[dev]'
	touch $@

# the tests need the lab packages and openssh-server too (the lab's netns fallback mode runs one sshd
# per host): nothing is skipped for a missing package
test-deps:
	@if [ "$$(id -u)" = 0 ]; then sh scripts/lab-deps.sh --netns; \
	else echo "not root: run 'sudo sh scripts/lab-deps.sh --netns' once for the lab tests"; fi

# the default run (well under 15 minutes on 2 cores); the lab scenarios of minutes each are `make test-long`
# (.ci/run runs both), `make test-all` runs everything in one go
test: venv test-deps
	$(PY) -m pytest -q -m "not long"

test-long: venv test-deps
	$(PY) -m pytest -q -m long

test-all: venv test-deps
	$(PY) -m pytest -q

# everything but the lab (no podman/ibsim needed)

test-fast: venv
	$(PY) -m pytest -q -m "not lab"

lint: venv
	.venv/bin/ruff check src tests bench docs/examples
	.venv/bin/mypy
	.venv/bin/ansible-lint -q roles deploy/site.yml

check: venv
	$(CF) check $(INV)

schema: venv
	$(CF) schema --output schemas/inventory.schema.json

# the schema, and docs/inventory.md's generated reference (every model field, the check rule ids)
docs: venv
	$(CF) schema --output schemas/inventory.schema.json --docs docs/inventory.md

plan: venv
	$(CF) plan $(INV) --export out/$(ENV)

render: venv
	$(CF) render $(INV) --output out/$(ENV)

validate: venv
	$(CF) validate $(INV)

# Benchmarks: as root, installs what they need (the lab packages and openssh-server for the deploy bench's
# SSH hosts); otherwise bench/run.py refuses and names what is missing. A timed run that fails stops the
# bench with the reason: no figure is printed for a run that did not work.
bench: venv
	@if [ "$$(id -u)" = 0 ]; then sh scripts/lab-deps.sh --netns; fi
	$(PY) bench/run.py

# The main job: check, render, deploy (pyinfra, or ENGINE=ansible), validate.
#   make deploy                       the lab inventory on the local lab (brought up first, systemd as PID 1 in
#                                     its 11 containers): deployed, validated, its units checked (`lab services`),
#                                     then where to look: the Alertmanager and store URLs (`alerts --where`),
#                                     and the floor page's address (served until `lab down`: docs/floor.md).
#                                     A machine without room for systemd in that many containers (inotify) stops
#                                     before anything starts, naming the sysctl to raise
#   make deploy ENV=lab-os            the same for inventories/lab-os: the lab with an Ubuntu-22.04-shaped gpu07
#                                     and a Rocky-9-shaped gpu08 (docs/os.md), on its own network (ENV=lab-*: a lab)
#   make deploy ENV=prod LAB=1        a rehearsal: prod's own files and pins deployed to a prod-shaped lab
#                                     (one container per selected node with systemd as PID 1, the whole prod
#                                     fabric simulated, hardware packages from the lab's stand-in repository),
#                                     then validated and its units checked (`lab services`: every unit enabled
#                                     and active, one master SM); no prod address is ever contacted. LIMIT= picks the nodes
#                                     (node, rack, role, suNN; default: a GPU rack, both SMs, one Lustre server)
#   make deploy ENV=prod DRY=1        a dry run on the real hosts: reads their state over SSH (10 s connect
#                                     timeout), shows the per-host diffs, changes nothing
#   make deploy ENV=prod              the real thing: the changes are shown and must be confirmed in a terminal;
#                                     CONFIRM=1 confirms up front (scripts). Never touches a lab.
# Only these variables are understood (ENV ENGINE LAB LIMIT DRY CONFIRM), each with the values above; anything
# else on the command line stops the run before it starts, so a typo cannot turn a rehearsal into a real run.
DEPLOY_VARS := ENV ENGINE LAB LIMIT DRY CONFIRM
CMDLINE_VARS := $(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v)))
UNKNOWN_VARS := $(filter-out $(DEPLOY_VARS) MAKEFLAGS MAKEOVERRIDES,$(CMDLINE_VARS))
IS_LAB := $(if $(filter lab lab-%,$(ENV))$(filter 1,$(LAB)),1)
# LIMIT given but empty (`LIMIT=$$RACK` with RACK unset) selects no host: refused, never read as every host
LIMIT_CHECK = $(if $(filter undefined,$(origin LIMIT)),,$(if $(strip $(LIMIT)),,$(error make: LIMIT= is empty: \
  it selects no host (leave LIMIT out for every host); nothing was run)))
# the selection as one shell word, whatever it holds (a range's brackets are not a glob)
LIMIT_ARG = $(if $(strip $(LIMIT)), --limit '$(subst ','\'',$(strip $(LIMIT)))')
LAB_ROOT := $(or $(CLUSTERFORGE_LAB_ROOT),.lab)

deploy-vars:
	$(if $(UNKNOWN_VARS),$(error make deploy: unknown variable(s) $(foreach v,$(UNKNOWN_VARS),$(v)=$($(v))): \
	  understood are $(DEPLOY_VARS); nothing was run))
	$(if $(filter-out 1,$(LAB)),$(error make deploy: LAB=$(LAB) is not understood: LAB=1 rehearses on the lab; \
	  leave LAB out for the real hosts))
	$(if $(filter-out 1,$(DRY)),$(error make deploy: DRY=$(DRY) is not understood: DRY=1 for a dry run))
	$(if $(filter-out 1,$(CONFIRM)),$(error make deploy: CONFIRM=$(CONFIRM) is not understood: CONFIRM=1 \
	  confirms a real deploy up front))
	$(if $(filter-out pyinfra ansible,$(ENGINE)),$(error make deploy: ENGINE=$(ENGINE) is not understood: \
	  pyinfra or ansible))
	$(if $(wildcard $(INV)/.),,$(error make deploy: ENV=$(ENV): no $(INV) directory))
	$(if $(and $(IS_LAB),$(CONFIRM)),$(error make deploy: CONFIRM=1 is for real hosts; a lab run needs none))
	$(LIMIT_CHECK)

deploy: deploy-vars venv $(if $(IS_LAB),deps)
ifeq ($(IS_LAB),1)
	$(CF) lab up $(INV) --systemd --no-start-sm --replace$(LIMIT_ARG)
endif
	$(CF) check $(INV)
	$(CF) render $(INV) --output out/$(ENV)
	$(CF) deploy $(INV) --engine $(ENGINE)$(LIMIT_ARG)$(if $(IS_LAB), --lab $(LAB_ROOT)/$(ENV)/state, --no-lab$(if $(CONFIRM), --yes)) $(if $(DRY),--dry-run,--no-diffs)
ifeq ($(DRY),)
	$(CF) validate $(INV)$(if $(IS_LAB),, --no-lab) --junit out/$(ENV)/validate.xml
ifeq ($(IS_LAB),1)
	$(CF) lab services $(INV)
endif
	$(CF) alerts $(INV) --where
ifeq ($(IS_LAB),1)
	$(CF) floor $(INV) --background
endif
endif

lab-up: venv deps
	$(LIMIT_CHECK)
	$(CF) lab up $(INV)$(LIMIT_ARG)

lab-down: venv
	$(CF) lab down $(INV)

lab-status: venv
	$(CF) lab status $(INV)

clean:
	rm -rf .venv out .pytest_cache .mypy_cache .ruff_cache
