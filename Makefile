# primus.trainenv developer entry points.
#   make controller   the Ansible controller in .venv (then: . .venv/bin/activate)
#   make test         every test: unit, lint, sanity, playbook checks on both controllers,
#                     the simulated world's self-test and the functional scenarios
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Interpreters. pyenv installs are preferred over PATH shims (a broken shim has been seen).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null)
PY312 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12) $(shell command -v python3.12 2>/dev/null))
PY310 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.10*/bin/python3.10) $(shell command -v python3.10 2>/dev/null))

VENV := $(CURDIR)/.venv
VENV310 := $(CURDIR)/.venv310
OUT := $(CURDIR)/tests/output
PYTHON := $(VENV)/bin/python
ANSIBLE_PLAYBOOK := $(VENV)/bin/ansible-playbook

# pip here must not see the machine's own configuration (extra indexes, find-links, caps).
export PIP_CONFIG_FILE := /dev/null
export PIP_DISABLE_PIP_VERSION_CHECK := 1
unexport PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONSTRAINT PIP_REQUIRE_VIRTUALENV
export PATH := $(VENV)/bin:$(PATH)
# Interpreters the tests use for target venvs and the second controller.
export PRIMUS_TEST_PYTHON312 := $(PY312)
export PRIMUS_TEST_PYTHON310 := $(PY310)
export PRIMUS_TEST_CONTROLLERS := $(VENV)/bin $(VENV310)/bin
export PRIMUS_TEST_OUTPUT := $(OUT)

.PHONY: help controller test unit lint sanity functional summary clean

help:
	@echo "make controller   create .venv with the Ansible controller (requirements/controller.txt)"
	@echo "make test         run every test (unit, lint, sanity, playbook checks, world, functional)"
	@echo "make world|world-test|demo   the simulated world (see README)"

$(VENV)/.controller: requirements/controller.txt
	@test -n "$(PY312)" || { echo "Python 3.12 not found: set PY312=/path/to/python3.12" >&2; exit 1; }
	$(PY312) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements/controller.txt
	touch $@

controller: $(VENV)/.controller

$(VENV)/.test: $(VENV)/.controller requirements/test.txt
	$(VENV)/bin/pip install --quiet -r requirements/test.txt
	touch $@

# ansible-core 2.17 on Python 3.10: the newest controller Ubuntu 22.04's python can run.
$(VENV310)/.controller: requirements/controller.txt
	@test -n "$(PY310)" || { echo "Python 3.10 not found: set PY310=/path/to/python3.10" >&2; exit 1; }
	$(PY310) -m venv $(VENV310)
	$(VENV310)/bin/pip install --quiet -r requirements/controller.txt
	touch $@

unit: $(VENV)/.test
	mkdir -p $(OUT)
	$(PYTHON) -m pytest tests/unit -q --junitxml=$(OUT)/unit.xml

lint: $(VENV)/.test
	mkdir -p $(OUT)
	$(VENV)/bin/ansible-lint --offline --profile production 2>&1 | tee $(OUT)/lint.txt
	@! grep -rnE '^\s*become:\s*(true|yes)' roles playbooks $(wildcard molecule) || { echo "become is used" >&2; exit 1; }

# ansible-test needs the collection under ansible_collections/<ns>/<name>: test a copy of the
# tracked (and new, not ignored) files. Its get-pip download cannot be reached here; the shim in
# tests/sanity stands in for it (it bootstraps pip with ensurepip, then installs from PyPI).
sanity: $(VENV)/.test
	mkdir -p $(OUT)
	pip_v=$$($(PYTHON) -c "import re,os,ansible_test;p=os.path.join(os.path.dirname(ansible_test.__file__),'_internal','python_requirements.py');print(re.search(r\"pip='([^']+)'\",open(p).read()).group(1))"); \
	  mkdir -p $$HOME/.ansible/test/cache; \
	  cp tests/sanity/get_pip_shim.py $$HOME/.ansible/test/cache/get_pip_$${pip_v//./_}.py
	root=$$(mktemp -d); dest=$$root/ansible_collections/primus/trainenv; mkdir -p $$dest; \
	  git ls-files -co --exclude-standard | grep -v '^\.collections/' | while read -r f; do [ -e "$$f" ] && echo "$$f"; done \
	    | tar -cf - -T - | tar -xf - -C $$dest; \
	  if (cd $$dest && $(VENV)/bin/ansible-test sanity --python 3.12 --requirements 2>&1 | tee $(OUT)/sanity.txt); \
	  then rc=0; else rc=$$?; fi; rm -rf $$root; exit $$rc

functional: $(VENV)/.test $(VENV310)/.controller
	mkdir -p $(OUT)
	rm -f $(OUT)/timings.txt
	$(PYTHON) -m pytest tests/functional -q -m functional --junitxml=$(OUT)/functional.xml

-include tests/world/world.mk

test: unit lint sanity world-test functional
	@$(MAKE) --no-print-directory summary

summary:
	@$(PYTHON) tests/summary.py $(OUT)

clean:
	rm -rf $(OUT) .pytest_cache
