# deploybot: `make demo` runs the main job on a simulated host; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup sshd slurm demo test bench clean engine-check

$(BIN)/deploybot: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

setup: $(BIN)/deploybot

# The integration tests start a real OpenSSH sshd on loopback.
sshd:
	@[ -x /usr/sbin/sshd ] || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openssh-server openssh-client >/dev/null; }

# The Slurm backend's tests start a real one-node cluster (tests/slurm.py): munge, slurmctld, slurmd (22.05).
slurm:
	@[ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && command -v sbatch >/dev/null && [ -x /usr/sbin/munged ] \
	  || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	  slurmctld slurmd slurm-client munge >/dev/null; }

demo: setup
	$(BIN)/deploybot demo

# Two workers: most of the suite waits on sshd, slurmctld and the simulated engines rather than on a core, so two
# workers halve the time on a 2-core runner (each worker starts its own sshd and Slurm cluster on free ports).
test: setup sshd slurm
	$(BIN)/python -m pytest -n 2

# The real engines' own validation over every plan deploybot makes (tools/README.md). Not part of `make test`:
# it installs each captured SGLang / vLLM release into throwaway venvs under ENGINE_WORK (a few GB, PyPI needed).
ENGINE_WORK ?= /tmp/engine-venvs
engine-check: setup
	$(BIN)/python tools/engine_check.py --work $(ENGINE_WORK)

bench: setup sshd
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
