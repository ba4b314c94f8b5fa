# primus.trainenv developer entry points.
#   make controller   the Ansible controller in .venv (then: . .venv/bin/activate)
#   make test         every test: unit, lint, sanity, playbook checks on both controllers,
#                     the simulated world's self-test and the functional scenarios; installs the
#                     system packages it needs when run as root (TEST_SYSTEM_PACKAGES below)
#   make check        the quick loop before a push: unit, lint, one venv,torch converge and its re-run
#   make docs         the documentation site (antsibull-docs) into DOCS_DEST
# The manual: docs/ (docs/testing.md describes the targets of the tests).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Interpreters. pyenv installs are preferred over PATH shims (a broken shim has been seen).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null)
PY312 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12) $(shell command -v python3.12 2>/dev/null))
PY310 ?= $(firstword $(wildcard $(PYENV_ROOT)/versions/3.10*/bin/python3.10) $(shell command -v python3.10 2>/dev/null))

# The controller: Python 3.12 with ansible-core 2.21, else Python 3.10 with ansible-core 2.17 (the
# newest release a python3.10 controller such as Ubuntu 22.04's can run). `make controller PY312=`
# makes the 3.10 one, as on a machine without 3.12; VENV=/dir puts it elsewhere.
CONTROLLER_PYTHON ?= $(or $(PY312),$(PY310))
VENV ?= $(CURDIR)/.venv
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

# System packages `make test` needs: <Debian/Ubuntu package>:<command, or absolute path, that shows it
# is installed>. As root, `make test` installs the missing ones with apt-get (non-interactive);
# otherwise it stops at once with the apt-get line to run (tests/prerequisites.sh).
#   git, make, g++: the world's stand-in builds; shellcheck: ansible-test sanity and env.sh;
#   openssh-server/-client: the loopback sshd of the unprivileged-user scenarios; util-linux (runuser):
#   commands as that user; environment-modules: the modulefile loaded by the real modulecmd;
#   ca-certificates: the world's first build downloads the real build tools from PyPI;
#   python3: the unprivileged target runs Ansible's modules with /usr/bin/python3, as a fleet node does;
#   debootstrap: the world's Debian trixie root (glibc 2.41) where TE wheel mode is proven;
#   tcl: tclsh, which the unit tests load the modulefile with beside modulecmd.
TEST_SYSTEM_PACKAGES := git:git make:make g++:g++ shellcheck:shellcheck \
  openssh-server:/usr/sbin/sshd openssh-client:ssh-keygen util-linux:runuser \
  environment-modules:modulecmd ca-certificates:/etc/ssl/certs/ca-certificates.crt python3:/usr/bin/python3 \
  debootstrap:/usr/sbin/debootstrap tcl:tclsh
# The parts of it that the entry points running part of the tests need, checked the same way before they run anything:
# the world's stand-in builds (make demo, bench, bench-fleet), and the scenarios as the unprivileged user over a
# loopback sshd (make test-offline, test-faults, molecule, test-fleet).
WORLD_SYSTEM_PACKAGES := git:git make:make g++:g++ ca-certificates:/etc/ssl/certs/ca-certificates.crt
SCENARIO_SYSTEM_PACKAGES := $(WORLD_SYSTEM_PACKAGES) openssh-server:/usr/sbin/sshd openssh-client:ssh-keygen \
  util-linux:runuser python3:/usr/bin/python3

# The suites of `make test` as <make target>:<result name in tests/output>, in groups run one after the other.
# In a group, suites joined by + run at the same time.
# The functional scenarios and the molecule fleet scenario run alone: run beside each other (or beside the other
# suites) on 2 cores, every converge took twice as long and make test 60 minutes instead of 54 (docs/benchmarks.md).
# molecule in make test: the fleet scenario (the default scenario's one-node converge, idempotence and verify are
# what tests/functional/test_releases.py does with v26.5 on the same world; make molecule runs both).
TEST_SUITES := unit:unit+world-test:world lint:lint+docs-lint:docs+sanity:sanity functional:functional test-fleet:molecule

.PHONY: help controller prerequisites test check unit lint sanity functional molecule summary clean \
  run-detached attach run-status stop-run runs bench bench-fleet test-offline wheelhouse test-fleet test-faults \
  docs docs-lint changelog prerequisites-scenarios prerequisites-molecule prerequisites-world

help:
	@echo "make controller   create .venv with the Ansible controller (Python 3.12: ansible-core 2.21, else 3.10: 2.17)"
	@echo "make test         run every test (unit, lint, sanity, playbook checks, world, functional, molecule) and summarise"
	@echo "make check        the quick loop before a push: unit, lint, one venv,torch converge on the world and its re-run"
	@echo "make docs         the documentation site (antsibull-docs: modules, filters, roles, the manual) into DOCS_DEST"
	@echo "make docs-lint    antsibull-docs lint-collection-docs, antsibull-changelog lint, CHANGELOG.md current"
	@echo "make changelog    CHANGELOG.md from changelogs/fragments (antsibull-changelog, the version of galaxy.yml)"
	@echo "make wheelhouse   an offline wheelhouse of a release (WHEELHOUSE=dir, WHEELHOUSE_PINS=pins file, WHEELHOUSE_STORE=wheel store)"
	@echo "make test-offline the release lock, index probe, re-lock helper and site mirror tests alone"
	@echo "make test-faults  the fault matrix alone: kill -9 at every stage kind, 503s, a remote down, a full disk, racing runs"
	@echo "make molecule     molecule test (scenarios default and fleet: the world, unprivileged targets, converge, idempotence, verify)"
	@echo "make test-fleet   molecule test -s fleet alone (three nodes over SSH, one build per build key, the wheel store)"
	@echo "make world|world-test|demo   the simulated world (tests/world/README.md; make demo: try it without AMD hardware)"
	@echo "make world-snapshot|world-trixie   refresh the PyPI metadata snapshot (network) / build the glibc 2.41 root"
	@echo "make run-detached RUN=name [INVENTORY=file] [VARS='@vars.yml key=value'] [TAGS=stages] [LIMIT=hosts]"
	@echo "                  start playbooks/primus.yml detached (ansible-runner; survives the terminal; docs/fleets.md)"
	@echo "make attach RUN=name | run-status RUN=name | stop-run RUN=name | runs   follow, look at, stop, list detached runs"
	@echo "make bench        first run, converged re-run, --tags te, --check --diff, lock refusal: seconds, CPU, requests, pip (UPSTREAM=setup.sh)"
	@echo "make bench-fleet  a converged run's controller cost for FLEET_SIZES=1,4,16 local hosts (FLEET_TAGS=venv,torch)"

# A Python without ensurepip (Debian/Ubuntu without python3.X-venv, and no root to add it) gets a
# venv without pip, and pip from its wheel on PyPI, sha256-checked (tests/bootstrap_pip.py).
BOOTSTRAP_PIP ?= pip==26.3
BOOTSTRAP_INDEX ?= https://pypi.org/simple
# Where the command `make controller` prints without Python 3.12 or 3.10 puts uv (which then provides a 3.12).
UV_VENV ?= $(CURDIR)/.uv

$(VENV)/.controller: requirements/controller.txt
	@test -n "$(CONTROLLER_PYTHON)" || { \
	  py=$$(command -v python3 || true); \
	  echo "Neither Python 3.12 nor 3.10 found (not in pyenv, not on PATH$${py:+; python3 is $$py, Python $$("$$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo '?')})." >&2; \
	  echo "Set PY312=/path/to/python3.12 (or PY310=/path/to/python3.10), or get a Python 3.12 from uv's PyPI wheel (no root):" >&2; \
	  echo "  $${py:-python3} -m venv --without-pip $(UV_VENV) && $${py:-python3} tests/bootstrap_pip.py $(UV_VENV)/bin/python '$(BOOTSTRAP_PIP)' '$(BOOTSTRAP_INDEX)' && $(UV_VENV)/bin/pip install --quiet uv && $(UV_VENV)/bin/uv python install 3.12 && make controller PY312=\"\$$($(UV_VENV)/bin/uv python find 3.12)\"" >&2; \
	  exit 1; }
	@if $(CONTROLLER_PYTHON) -c 'import ensurepip' 2>/dev/null; then \
	  echo "$(CONTROLLER_PYTHON) -m venv $(VENV)"; $(CONTROLLER_PYTHON) -m venv $(VENV); \
	else \
	  echo "$(CONTROLLER_PYTHON) has no ensurepip (python3.X-venv is not installed): a venv without pip, then $(BOOTSTRAP_PIP) from $(BOOTSTRAP_INDEX)"; \
	  $(CONTROLLER_PYTHON) -m venv --without-pip $(VENV); \
	  $(CONTROLLER_PYTHON) tests/bootstrap_pip.py $(VENV)/bin/python '$(BOOTSTRAP_PIP)' '$(BOOTSTRAP_INDEX)'; \
	fi
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements/controller.txt
	touch $@

controller: $(VENV)/.controller

$(VENV)/.test: $(VENV)/.controller requirements/test.txt
	$(VENV)/bin/pip install --quiet -r requirements/test.txt
	touch $@

# The second controller the tests use: exactly `make controller` on a machine without Python 3.12.
# (Defined only outside that sub-make, where VENV is VENV310 and the rule above makes it.)
ifneq ($(VENV),$(VENV310))
$(VENV310)/.controller: requirements/controller.txt
	@test -n "$(PY310)" || { echo "Python 3.10 not found: set PY310=/path/to/python3.10" >&2; exit 1; }
	$(MAKE) --no-print-directory controller PY312= VENV=$(VENV310)
endif

# The quick loop before a push (docs/testing.md): the unit tests, the linters, and one real converge of venv,torch
# on the world by the unprivileged target user, with its idempotent re-run (tests/functional/test_venv_torch.py).
CHECK_SCENARIOS := test_first_run_builds_the_venv_with_the_exact_pins or test_second_run_changes_nothing_and_is_quick
check: prerequisites-scenarios $(VENV)/.test
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory lint
	$(PYTHON) -m pytest tests/functional/test_venv_torch.py -q -m functional -k '$(CHECK_SCENARIOS)' \
	  --junitxml=$(OUT)/check.xml

unit: $(VENV)/.test
	mkdir -p $(OUT)
	$(PYTHON) -m pytest tests/unit -q --junitxml=$(OUT)/unit.xml

lint: $(VENV)/.test
	mkdir -p $(OUT)
	$(VENV)/bin/ansible-lint --offline --profile production --sarif-file $(OUT)/lint.sarif 2>&1 | tee $(OUT)/lint.txt
	@! grep -rnE '^\s*become:\s*(true|yes)' roles playbooks $(wildcard molecule) || { echo "become is used" >&2; exit 1; }

# ansible-test needs the collection under ansible_collections/<ns>/<name>: test a copy of the
# tracked (and new, not ignored) files. Its get-pip download cannot be reached here; the shim in
# tests/sanity stands in for it (it bootstraps pip with ensurepip, then installs from PyPI).
# Each sanity test's result (passed, failed or skipped) is kept as JUnit XML in tests/output/sanity/.
sanity: $(VENV)/.test
	mkdir -p $(OUT)
	pip_v=$$($(PYTHON) -c "import re,os,ansible_test;p=os.path.join(os.path.dirname(ansible_test.__file__),'_internal','python_requirements.py');print(re.search(r\"pip='([^']+)'\",open(p).read()).group(1))"); \
	  mkdir -p $$HOME/.ansible/test/cache; \
	  cp tests/sanity/get_pip_shim.py $$HOME/.ansible/test/cache/get_pip_$${pip_v//./_}.py
	root=$$(mktemp -d); dest=$$root/ansible_collections/primus/trainenv; mkdir -p $$dest; \
	  git ls-files -co --exclude-standard | grep -v '^\.collections/' | while read -r f; do [ -e "$$f" ] && echo "$$f"; done \
	    | tar -cf - -T - | tar -xf - -C $$dest; \
	  if (cd $$dest && $(VENV)/bin/ansible-test sanity --python 3.12 --requirements --junit 2>&1 | tee $(OUT)/sanity.txt); \
	  then rc=0; else rc=$$?; fi; \
	  rm -rf $(OUT)/sanity; if [ -d $$dest/tests/output/junit ]; then cp -r $$dest/tests/output/junit $(OUT)/sanity; fi; \
	  rm -rf $$root; exit $$rc

# The scenarios run in FUNCTIONAL_WORKERS processes (pytest-xdist), each test file whole in one worker
# (its module-scoped base stays in one process; tests/functional/conftest.py groups them by file), the fault matrix's
# two groups apart; each worker has its own world and sshd.
FUNCTIONAL_WORKERS ?= 2
functional: prerequisites $(VENV)/.test $(VENV310)/.controller
	mkdir -p $(OUT)
	rm -f $(OUT)/timings.txt
	$(PYTHON) -m pytest tests/functional -q -m functional -n $(FUNCTIONAL_WORKERS) --dist loadgroup --no-loadscope-reorder \
	  --junitxml=$(OUT)/functional.xml

# The release lock, preflight's index probe, the re-lock helper and site mirrors alone (docs/offline.md,
# docs/mirrors.md); `make test` runs the same files in unit and functional.
OFFLINE_UNIT := tests/unit/plugins/module_utils/test_release_lock.py tests/unit/plugins/plugin_utils/test_mirrors.py \
  tests/unit/test_relock.py
OFFLINE_FUNCTIONAL := tests/functional/test_release_lock.py tests/functional/test_offline.py
test-offline: prerequisites-scenarios $(VENV)/.test $(VENV310)/.controller
	mkdir -p $(OUT)
	$(PYTHON) -m pytest $(OFFLINE_UNIT) -q
	$(PYTHON) -m pytest $(OFFLINE_FUNCTIONAL) -q -m functional -n $(FUNCTIONAL_WORKERS) --dist loadfile

# The fault matrix alone (docs/reliability.md); `make test` runs the same file in functional. Its tests are
# grouped by the base they share (xdist_group): each group runs whole in one worker. FAULTS_ARGS: more pytest arguments.
FAULTS_ARGS ?=
test-faults: prerequisites-scenarios $(VENV)/.test $(VENV310)/.controller
	mkdir -p $(OUT)
	$(PYTHON) -m pytest tests/functional/test_faults.py -q -m functional -n $(FUNCTIONAL_WORKERS) --dist loadgroup \
	  --junitxml=$(OUT)/faults.xml $(FAULTS_ARGS)

# An offline wheelhouse of a release (docs/offline.md): every file of its lock and a bundle of every git
# remote; needs the release's lock beside its pins file.
WHEELHOUSE ?= $(CURDIR)/wheelhouse
WHEELHOUSE_PINS ?= roles/primus/vars/releases/v26.5.yml
# A wheel store (primus_wheel_store) whose built wheels go into <WHEELHOUSE>/store; empty: none.
WHEELHOUSE_STORE ?=
wheelhouse: $(VENV)/.controller
	$(PYTHON) tools/wheelhouse.py --pins $(WHEELHOUSE_PINS) --dest $(WHEELHOUSE)$(if $(WHEELHOUSE_STORE), --store $(WHEELHOUSE_STORE))

# molecule/ (molecule/README.md): `molecule test` of each scenario in MOLECULE_SCENARIOS, its output in
# tests/output/molecule-<scenario>.txt and a one-case JUnit report each (molecule writes none).
MOLECULE_SCENARIOS ?= default fleet
molecule: prerequisites-molecule $(VENV)/.test
	mkdir -p $(OUT)
	@status=0; for scenario in $(MOLECULE_SCENARIOS); do \
	  start=$$(date +%s.%N); rc=0; \
	  ANSIBLE_NOCOLOR=1 PY_COLORS=0 $(VENV)/bin/molecule test -s $$scenario 2>&1 | tee $(OUT)/molecule-$$scenario.txt || rc=$$?; \
	  seconds=$$(awk -v a=$$start -v b=$$(date +%s.%N) 'BEGIN{printf "%.1f", b-a}'); \
	  $(PYTHON) molecule/junit.py $$scenario $$rc $$seconds $(OUT)/molecule-$$scenario.txt $(OUT)/molecule-$$scenario.xml; \
	  [ $$rc = 0 ] || status=1; \
	done; \
	$(PYTHON) -c 'import sys, xml.etree.ElementTree as ET; r = ET.Element("testsuites"); [r.append(ET.parse(f).getroot()[0]) for f in sys.argv[2:]]; ET.ElementTree(r).write(sys.argv[1], encoding="unicode", xml_declaration=True)' \
	  $(OUT)/molecule.xml $(foreach s,$(MOLECULE_SCENARIOS),$(OUT)/molecule-$(s).xml); \
	exit $$status

# The fleet scenario alone (molecule/README.md).
test-fleet: prerequisites-molecule
	$(MAKE) --no-print-directory molecule MOLECULE_SCENARIOS=fleet

# The world's stand-in builds need git, make, a C++ compiler and, the first time, PyPI (their build tools): make world,
# and make demo through it (tests/world/world.mk), check them first.
world: prerequisites-world

-include tests/world/world.mk

# A make variable as one single-quoted shell word.
shell_quote = '$(subst ','\'',$(1))'

# Detached runs (docs/fleets.md): scripts/detached_run.py drives ansible-runner. RUN names the run
# (RUNS_DIR/RUN, RUNS_DIR default ~/.primus-trainenv/runs); VARS holds -e values, separated by spaces.
RUN ?=
RUNS_DIR ?=
INVENTORY ?=
VARS ?=
TAGS ?=
LIMIT ?=
DETACHED = $(PYTHON) scripts/detached_run.py $(if $(RUNS_DIR),--runs-dir $(call shell_quote,$(RUNS_DIR)))
NEED_RUN = @test -n "$(RUN)" || { echo "RUN=<name> is needed, e.g. make $@ RUN=fleet1 (make runs lists them)" >&2; exit 2; }

run-detached: $(VENV)/.controller
	$(NEED_RUN)
	$(DETACHED) start $(call shell_quote,$(RUN)) $(if $(INVENTORY),-i $(call shell_quote,$(INVENTORY))) \
	  $(foreach v,$(VARS),-e $(call shell_quote,$(v))) $(if $(TAGS),--tags $(call shell_quote,$(TAGS))) \
	  $(if $(LIMIT),--limit $(call shell_quote,$(LIMIT)))

attach: $(VENV)/.controller
	$(NEED_RUN)
	$(DETACHED) attach $(call shell_quote,$(RUN))

run-status: $(VENV)/.controller
	$(NEED_RUN)
	$(DETACHED) status $(call shell_quote,$(RUN))

stop-run: $(VENV)/.controller
	$(NEED_RUN)
	$(DETACHED) stop $(call shell_quote,$(RUN))

runs: $(VENV)/.controller
	$(DETACHED) list

# Benchmarks (not part of `make test`; tests/bench/bench.py): against the world in WORLD_DIR, served for the
# bench when it is not running. UPSTREAM=/path/to/setup.sh runs upstream's installer beside ours
# (UPSTREAM_ENV='KEY=VALUE ...' for its environment); BENCH_WORK=dir keeps the bases and runner's artifacts.
UPSTREAM ?=
BENCH_WORK ?=
FLEET_SIZES ?= 1,4,16
FLEET_TAGS ?= venv,torch
BENCH = $(PYTHON) tests/bench/bench.py --world $(call shell_quote,$(WORLD_DIR)) \
  $(if $(BENCH_WORK),--work $(call shell_quote,$(BENCH_WORK)))

bench: prerequisites-world $(VENV)/.test world
	$(BENCH) $(if $(UPSTREAM),--upstream $(call shell_quote,$(UPSTREAM)))

bench-fleet: prerequisites-world $(VENV)/.test world
	$(BENCH) --fleet $(call shell_quote,$(FLEET_SIZES)) --fleet-tags $(call shell_quote,$(FLEET_TAGS))

# System packages, checked before anything else of the goal runs (tests/prerequisites.sh): as root on Debian or Ubuntu
# the missing ones are installed with apt-get; otherwise the goal stops with the apt-get line to run.
#   $(call system_packages,<package>:<probe> ...,<the Python versions needed, with their venv module>)
system_packages = @PY312='$(PY312)' PY310='$(PY310)' PREREQUISITES_PYTHONS='$(2)' \
  PREREQUISITES_GOAL='make $(or $(MAKECMDGOALS),test)' tests/prerequisites.sh $(1)

prerequisites:
	$(call system_packages,$(TEST_SYSTEM_PACKAGES),3.12 3.10)
prerequisites-scenarios:
	$(call system_packages,$(SCENARIO_SYSTEM_PACKAGES),3.12 3.10)
prerequisites-molecule:
	$(call system_packages,$(SCENARIO_SYSTEM_PACKAGES),3.12)
prerequisites-world:
	$(call system_packages,$(WORLD_SYSTEM_PACKAGES),3.12)

# The documentation (docs/testing.md, "The documentation"). tools/docs_gen.py makes the generated parts of the manual
# (docs/*.md between GENERATED markers) and the manual in the docsite's format (docs/docsite/rst/); then antsibull-docs
# builds the collection's site - a page per module, filter and role from the code's own documentation, the manual as
# its extra docs - with Sphinx, strict (a warning fails it) and without network (tools/docs_sphinx.py), into
# DOCS_DEST (git-ignored by default). DOCS_DEST is replaced only when it is empty or a site this target built.
DOCS_DEST ?= $(CURDIR)/docs/_build
docs: $(VENV)/.test
	$(PYTHON) tools/docs_gen.py
	@dest=$(call shell_quote,$(DOCS_DEST)); \
	  if [ -e "$$dest" ] && [ -n "$$(ls -A "$$dest")" ] && [ ! -e "$$dest/.buildinfo" ]; then \
	    echo "DOCS_DEST=$$dest holds other files than a site of make docs: give an empty or new directory" >&2; exit 2; fi; \
	  work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	  export ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.collections; \
	  antsibull-docs sphinx-init --use-current --squash-hierarchy --dest-dir "$$work" --project primus.trainenv \
	    --title primus.trainenv --copyright 'primus.trainenv developers' primus.trainenv >/dev/null; \
	  printf '%s\n' '' '# make docs: no network (tools/docs_sphinx.py resolves the labels of ansible-core docs).' \
	    'import sys' "sys.path.insert(0, '$(CURDIR)/tools')" "extensions.append('docs_sphinx')" 'intersphinx_mapping = {}' \
	    >> "$$work/conf.py"; \
	  "$$work/build.sh"; \
	  rm -rf "$$dest"; mkdir -p "$$dest"; cp -r "$$work/build/html/." "$$dest/"; \
	  echo "The documentation site: $$dest/index.html"

# The linters of the documentation and the changelog (a suite of make test, results in tests/output/docs.xml).
docs-lint: $(VENV)/.test
	mkdir -p $(OUT)
	$(PYTHON) -m pytest tests/docs -q --junitxml=$(OUT)/docs.xml

# CHANGELOG.md and changelogs/changelog.yaml from changelogs/fragments, for the version of galaxy.yml.
changelog: $(VENV)/.test
	antsibull-changelog release --version $$(sed -n 's/^version: *//p' galaxy.yml) --reload-plugins --refresh

# Every suite runs, also after one failed, so the summary shows every failure. Each suite's exit
# status and wall time go to tests/output/<name>.status; tests/summary.py reads them with the
# suites' own reports, and its verdict (non-zero: a suite failed or left no results) is make test's.
# Suites joined by + run at the same time (each mostly uses one core; this machine has two), their
# output kept in tests/output/<name>.log and shown once both are done. The controller venvs are made
# first, so two suites never make them at once (when they cannot be made, every suite fails on its own).
test: prerequisites
	@rm -rf $(OUT); mkdir -p $(OUT); echo "$$EPOCHREALTIME" > $(OUT)/test.start; \
	$(MAKE) --no-print-directory $(VENV)/.test $(VENV310)/.controller || true; \
	run_suite() { start=$$EPOCHREALTIME; rc=0; $(MAKE) --no-print-directory $${1%%:*} || rc=$$?; \
	              echo "rc=$$rc start=$$start end=$$EPOCHREALTIME" > $(OUT)/$${1#*:}.status; }; \
	for group in $(TEST_SUITES); do \
	  if [ "$${group#*+}" = "$$group" ]; then run_suite $$group; continue; fi; \
	  pids=; \
	  for suite in $${group//+/ }; do run_suite $$suite > $(OUT)/$${suite#*:}.log 2>&1 & pids="$$pids $$!"; done; \
	  wait $$pids; \
	  for suite in $${group//+/ }; do echo "== $${suite#*:} (run beside $$group)"; cat $(OUT)/$${suite#*:}.log; done; \
	done; \
	$(MAKE) --no-print-directory summary

# The summary needs only the standard library: it runs even when .venv could not be made.
summary:
	@py=$(PYTHON); [ -x "$$py" ] || py=python3; "$$py" tests/summary.py $(OUT)

clean:
	rm -rf $(OUT) .pytest_cache
