# Two entry points for a fresh machine: `make demo` and `make test`. Both build .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PAPERSCOPE := $(VENV)/bin/paperscope
STAMP := $(VENV)/.installed

.PHONY: install browser demo test lint corpus bench eval clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build first, so nothing pulls the multi-GB CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

corpus: install
	$(PY) examples/render_papers.py --out examples/pdfs

# Ingest the sample corpus into the embedded default (Milvus Lite under .paperscope/; a second run finds
# every paper unchanged), then ask a Track A and a Track B question (with an LLM if one is configured).
demo: install
	@test -d examples/pdfs || $(PY) examples/render_papers.py --out examples/pdfs
	$(PAPERSCOPE) parse examples/pdfs/flashrank.pdf
	$(PAPERSCOPE) ingest examples/pdfs
	$(PAPERSCOPE) papers
	$(PAPERSCOPE) ask "How many GPUs were used to pretrain Marten-1B, and for how long?"
	$(PAPERSCOPE) ask "What methods improve the accuracy of retrieval-augmented generation?"

lint: install
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m mypy

# The web page's tests drive Debian's headless Chromium with Selenium: installed here when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		{ $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver; }

test: install lint browser
	$(PY) -m pytest -q

# Parse, ingest, query latency at 1k and 10k chunks, memory: writes benchmarks/RESULTS.md (about 5 min).
# Heavier: python benchmarks/query_bench.py --sizes 100000; python benchmarks/run_all.py --with-store-bench
bench: install
	$(PY) benchmarks/run_all.py

eval: install
	$(PAPERSCOPE) ingest examples/pdfs
	$(PAPERSCOPE) eval eval/sample.jsonl --no-agent --out eval/report.md

clean:
	rm -rf $(VENV) .paperscope .pytest_cache .mypy_cache .ruff_cache
