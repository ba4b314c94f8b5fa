#!/usr/bin/env bash
# The system packages a make goal needs (`make test`: all of them), checked before any test runs (called by the
# Makefile).
#
#   tests/prerequisites.sh PACKAGE:PROBE ...
#
# PACKAGE is a Debian/Ubuntu package; PROBE shows that it is installed: a command (looked up on
# PATH plus the sbin directories) or an absolute path. PY312 and PY310 in the environment are the
# interpreters make found (empty: none); each Python version of PREREQUISITES_PYTHONS (default:
# "3.12 3.10") needs its venv module (python3.X-venv on Debian and Ubuntu), and a missing one is
# installed from apt when apt has it. PREREQUISITES_GOAL (default: "make test") is what the
# messages name.
#
# Everything there: nothing happens (no root needed). Run as root on an apt system: installs what
# is missing, non-interactively. Otherwise: stops at once with the exact apt-get line to run.
set -euo pipefail

PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
goal=${PREREQUISITES_GOAL:-make test}
read -r -a pythons <<<"${PREREQUISITES_PYTHONS-3.12 3.10}"
missing=()
unavailable=()

present() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

has_candidate() {
  command -v apt-cache >/dev/null 2>&1 && apt-cache policy "$1" 2>/dev/null | grep -Eq '^ *Candidate: [^(]'
}

check_packages() {
  missing=()
  local entry
  for entry in "$@"; do
    present "${entry#*:}" || missing+=("${entry%%:*}")
  done
}

# Interpreters: a Python without ensurepip/venv cannot make the controller and test venvs.
check_pythons() {
  unavailable=()
  local version var python
  for version in "${pythons[@]}"; do
    var=PY${version/./}
    python=${!var:-}
    if [ -z "$python" ]; then
      if has_candidate "python$version"; then
        missing+=("python$version" "python$version-venv")
      else
        unavailable+=("$version")
      fi
    elif ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
      missing+=("python$version-venv")
    fi
  done
}

# Whether a Python version asked for was not found.
python_missing() {
  local version var
  for version in "${pythons[@]}"; do
    var=PY${version/./}
    [ -n "${!var:-}" ] || return 0
  done
  return 1
}

check_packages "$@"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && { [ ${#missing[@]} -gt 0 ] || python_missing; }; then
  # Package lists first: a fresh machine (or container) may have none, and then no candidates.
  echo "$goal: updating apt's package lists (apt-get update)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
fi
check_pythons

if [ ${#missing[@]} -gt 0 ]; then
  install=(apt-get install -y --no-install-recommends "${missing[@]}")
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$goal: missing system packages: ${missing[*]}" >&2
    echo "  Install them as root (Debian/Ubuntu names), then run $goal again:" >&2
    echo "    ${install[*]}" >&2
    exit 1
  fi
  echo "$goal: installing missing system packages: ${install[*]}" >&2
  DEBIAN_FRONTEND=noninteractive "${install[@]}" -qq </dev/null >/dev/null
  check_packages "$@"
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$goal: still missing after apt-get install: ${missing[*]}" >&2
    exit 1
  fi
fi

for version in "${unavailable[@]}"; do
  cat >&2 <<EOF
$goal: no Python $version found, and apt has no python$version package on this system.
  The tests need Python 3.12 (the target venvs, the ansible-core 2.21 controller) and 3.10 (the
  ansible-core 2.17 controller). Provide one, for example 'pyenv install $version' or
  'uv python install $version', then run: $goal PY${version/./}=/path/to/python$version
EOF
done
[ ${#unavailable[@]} -eq 0 ]
