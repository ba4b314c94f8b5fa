# The simulated ROCm world (tests/world/README.md). Included by the top Makefile; also usable
# alone: make -f tests/world/world.mk world-test PYTHON=/path/to/python3 (needs pytest, PyYAML).
#   make world          build it into $(WORLD_DIR) (deterministic; rebuilt when its sources change)
#   make world-test     its self-test (builds its own copy in a temp dir, on a free port)
#   make world-start    serve $(WORLD_DIR) on http://127.0.0.1:$(WORLD_PORT)   make world-stop
#   make demo           playbooks/primus.yml, unchanged, on localhost against the served world
#                       DEMO_TAGS=preflight,venv (default: all default stages), DEMO_BASE=/abs/dir
#                       (default: a fresh temporary dir), DEMO_HOST=mi300x (a host of tests/world/hosts),
#                       DEMO_RELEASE=v26.5.1 (default v26.5: the world's overlay pins-$(DEMO_RELEASE).yml)
#   make world-snapshot re-take tests/world/pypi-snapshot.json from PyPI (network, about 12 min)
#   make world-trixie   the Debian trixie root for TE wheel mode (root, Debian's mirror; cached in
#                       .cache/trixie-root, reused; world-test builds it when missing)

PYTHON ?= python3
ANSIBLE_PLAYBOOK ?= ansible-playbook
WORLD_DIR ?= $(CURDIR)/.world
WORLD_PORT ?= 38611
PRIMUS_TEST_PYTHON312 ?= $(or $(wildcard /root/.pyenv/versions/3.12.1/bin/python3.12),$(shell command -v python3.12 2>/dev/null))

DEMO_TAGS ?=
DEMO_RELEASE ?= v26.5
DEMO_BASE ?=
DEMO_HOST ?= mi300x
DEMO_HOST_DIR ?= $(CURDIR)/tests/world/hosts/$(DEMO_HOST)
DEMO_ROCMINFO ?= $(DEMO_HOST_DIR)/bin/rocminfo
DEMO_KFD_NODES ?= $(DEMO_HOST_DIR)/sys/class/kfd/kfd/topology/nodes
DEMO_ARGS ?=

# Tools the targets need from the top Makefile (its controller venv), when there is one.
WORLD_PYTHON_DEPS ?= $(if $(VENV),$(VENV)/.controller)
WORLD_TEST_DEPS ?= $(if $(VENV),$(VENV)/.test)

WORLD_SERVE = $(PYTHON) tests/world/serve.py
WORLD_STAMP = $(WORLD_DIR)/world.json
WORLD_SOURCES = $(wildcard $(CURDIR)/tests/world/*.py $(CURDIR)/tests/world/lib/*.py \
                           $(CURDIR)/tests/world/pypi-snapshot.json $(CURDIR)/roles/*/vars/releases/*.yml)

.PHONY: world world-test world-start world-stop world-snapshot world-trixie demo

# A world built for another port has other URLs and commits: rebuild it.
ifneq ($(shell sed -n 's/^ "port": \([0-9]*\).*/\1/p' $(WORLD_STAMP) 2>/dev/null),$(WORLD_PORT))
.PHONY: $(WORLD_STAMP)
endif

$(WORLD_STAMP): $(WORLD_SOURCES) | $(WORLD_PYTHON_DEPS)
	$(PYTHON) tests/world/build.py --dest $(WORLD_DIR) --port $(WORLD_PORT)

world: $(WORLD_STAMP)

world-test: $(WORLD_TEST_DEPS)
	PRIMUS_TEST_PYTHON312=$(PRIMUS_TEST_PYTHON312) $(PYTHON) -m pytest tests/world -q -p no:cacheprovider \
	  $(if $(OUT),--junitxml=$(OUT)/world.xml)

world-snapshot: | $(WORLD_PYTHON_DEPS)
	PIP_CONFIG_FILE=/dev/null $(PYTHON) tests/world/snapshot_metadata.py --python $(PRIMUS_TEST_PYTHON312)

world-trixie: | $(WORLD_PYTHON_DEPS)
	$(PYTHON) tests/world/trixie.py build --python $(PRIMUS_TEST_PYTHON312)

world-start: world
	$(WORLD_SERVE) start --root $(WORLD_DIR)

world-stop: | $(WORLD_PYTHON_DEPS)
	$(WORLD_SERVE) stop --root $(WORLD_DIR)

# The target node is simulated: pip must not see this machine's pip configuration, and the SDK's
# rocminfo/amdgpu-arch answer like $(DEMO_HOST). A server this recipe started is stopped on exit,
# also on failure; one that was already running is left alone. The playbook runs twice: the first
# run builds (its plan is printed by preflight), then the stages' build times (the manifest's
# timings, from the stamps) and the manifest summary are shown; the second run must change nothing
# (its recap and wall time are shown; a change fails the demo). The logs stay in $$base/logs/demo-run*.log.
DEMO_PLAYBOOK = env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT -u PIP_REQUIRE_VIRTUALENV \
	  PIP_CONFIG_FILE=/dev/null PRIMUS_WORLD_ROCMINFO=$(DEMO_HOST_DIR)/rocminfo.txt \
	  $(ANSIBLE_PLAYBOOK) playbooks/primus.yml $(if $(DEMO_TAGS),--tags $(DEMO_TAGS)) \
	    -e primus_base="$$base" \
	    -e primus_release_file=$(WORLD_DIR)/pins-$(DEMO_RELEASE).yml \
	    -e primus_python=$(PRIMUS_TEST_PYTHON312) \
	    -e primus_rocminfo=$(DEMO_ROCMINFO) \
	    -e primus_kfd_nodes_path=$(DEMO_KFD_NODES) \
	    -e primus_min_free_gib=1 \
	    $(DEMO_ARGS)

demo: world
	@started=0; \
	if ! $(WORLD_SERVE) status --root $(WORLD_DIR) >/dev/null; then \
	  $(WORLD_SERVE) start --root $(WORLD_DIR); started=1; \
	fi; \
	trap 'if [ $$started = 1 ]; then $(WORLD_SERVE) stop --root $(WORLD_DIR); fi' EXIT; \
	base='$(DEMO_BASE)'; \
	if [ -z "$$base" ]; then base=$$(mktemp -d "$${TMPDIR:-/tmp}/primus-demo.XXXXXX"); fi; \
	mkdir -p "$$base/logs"; \
	echo "demo: SIMULATED - the world's stand-in packages and repositories, no AMD GPU, no ROCm"; \
	echo "demo: PRIMUS_BASE=$$base, release $(DEMO_RELEASE), host $(DEMO_HOST), tags $(or $(DEMO_TAGS),<all default stages>)"; \
	echo "demo: run 1 (builds)"; \
	t0=$$(date +%s.%N); \
	$(DEMO_PLAYBOOK) 2>&1 | tee "$$base/logs/demo-run1.log"; \
	t1=$$(date +%s.%N); \
	echo; echo "demo: run 1 took $$(awk -v a=$$t0 -v b=$$t1 'BEGIN{printf "%.0f", b-a}') s"; \
	if [ -f "$$base/manifest/manifest.json" ]; then \
	  $(PYTHON) tests/world/demo_report.py timings "$$base"; \
	  echo; echo "Manifest summary ($$base/manifest/summary.txt):"; sed 's/^/  /' "$$base/manifest/summary.txt"; \
	else echo "demo: no manifest (the manifest stage was not among DEMO_TAGS)"; fi; \
	echo; echo "demo: run 2 (converged: must change nothing)"; \
	t0=$$(date +%s.%N); \
	$(DEMO_PLAYBOOK) > "$$base/logs/demo-run2.log" 2>&1 || { tail -n 40 "$$base/logs/demo-run2.log"; exit 1; }; \
	t1=$$(date +%s.%N); \
	echo "demo: run 2 took $$(awk -v a=$$t0 -v b=$$t1 'BEGIN{printf "%.1f", b-a}') s; its recap ($$base/logs/demo-run2.log):"; \
	$(PYTHON) tests/world/demo_report.py recap "$$base/logs/demo-run2.log" \
	  || { echo "demo: the second run changed something (see $$base/logs/demo-run2.log)" >&2; exit 1; }
