# clusterforge — every target creates .venv on its own when it is missing.
ENV ?= lab
ENGINE ?= pyinfra
PY := .venv/bin/python
CF := .venv/bin/clusterforge
INV := inventories/$(ENV)

.PHONY: deps venv test test-fast lint check schema bench deploy plan render validate lab-up lab-down lab-status clean

# Debian packages of the lab and the deploy tests (podman, ibsim, OpenSM, ...): installed when
# missing and we are root; otherwise say what to run. Idempotent and quick when all are there.
deps:
	@if [ "$$(id -u)" = 0 ]; then sh scripts/lab-deps.sh; \
	else echo "not root: run 'sudo sh scripts/lab-deps.sh' once for the lab"; fi

venv: .venv/.stamp
.venv/.stamp: pyproject.toml
	python3 -m venv .venv
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -e '.[dev]'
	touch $@

test: venv deps
	$(PY) -m pytest -q

# everything but the lab (no podman/ibsim needed)

test-fast: venv
	$(PY) -m pytest -q -m "not lab"

lint: venv
	.venv/bin/ruff check src tests bench
	.venv/bin/mypy
	.venv/bin/ansible-lint -q roles deploy/site.yml

check: venv
	$(CF) check $(INV)

schema: venv
	$(CF) schema --output schemas/inventory.schema.json

plan: venv
	$(CF) plan $(INV) --export out/$(ENV)

render: venv
	$(CF) render $(INV) --output out/$(ENV)

validate: venv
	$(CF) validate $(INV)

bench: venv
	$(PY) bench/run.py

# The main job. ENV=lab (the default) brings the local lab up first: podman containers with
# sshd on a simulated InfiniBand fabric (ibsim), OpenSM on the subnet-manager container.
# Then: check, render, deploy (pyinfra, or ENGINE=ansible; LIMIT=host|rack|role; DRY=1 for a
# dry run that prints per-host diffs), and validate the result against the inventory.
deploy: venv deps
ifeq ($(ENV),lab)
	$(CF) lab up $(INV)
endif
	$(CF) check $(INV)
	$(CF) render $(INV) --output out/$(ENV)
	$(CF) deploy $(INV) --engine $(ENGINE) $(if $(LIMIT),--limit $(LIMIT)) $(if $(DRY),--dry-run,--no-diffs)
ifeq ($(DRY),)
	$(CF) validate $(INV) --junit out/$(ENV)/validate.xml
endif

lab-up: venv deps
	$(CF) lab up $(INV)

lab-down: venv
	$(CF) lab down $(INV)

lab-status: venv
	$(CF) lab status $(INV)

clean:
	rm -rf .venv out .pytest_cache .mypy_cache .ruff_cache
