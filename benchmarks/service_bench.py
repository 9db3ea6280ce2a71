"""Answer latency through `paperscope serve` (no LLM) beside a fresh `paperscope ask --no-agent` process per question.

Ingests the sample corpus (examples/pdfs) into a temporary home (or uses --home), then times:
- a fresh process per question: `paperscope ask Q --no-agent --json` (Python start, imports, the embedder and the
  store loaded every time: what a script calling the CLI pays);
- the same through a running server: `paperscope ask Q --no-agent --json --server URL` (a fresh client process,
  the store and embedder already loaded in the server);
- POST /v1/chat {"query": Q, "no_agent": true} from one client, one question at a time, and from 8 clients at once.
The server is a real `paperscope serve --port 0` process on 127.0.0.1; no LLM is configured for any of them.

Usage: python benchmarks/service_bench.py [--home DIR] [--queries eval/sample.jsonl] [--cli 10] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PAPERSCOPE = Path(sys.executable).with_name("paperscope")
CONCURRENT = 8

from paperscope.eval.queries import load_queries  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def env_for(home: Path) -> dict[str, str]:
    """The environment without any LLM or server settings, with PAPERSCOPE_HOME."""
    drop = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PAPERSCOPE_LLM_MODEL", "PAPERSCOPE_SERVER", "PAPERSCOPE_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "PAPERSCOPE_HOME": str(home)}


def ensure_corpus(home: Path) -> None:
    if (home / "milvus.db").exists():
        return
    t0 = time.perf_counter()
    subprocess.run(
        [str(PAPERSCOPE), "ingest", str(ROOT / "examples" / "pdfs"), "--json"],
        env=env_for(home),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"ingested the sample corpus in {time.perf_counter() - t0:.0f} s")


def time_processes(args: list[list[str]], env: dict[str, str]) -> list[float]:
    out = []
    for argv in args:
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def start_server(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    record = home / "serve.json"
    record.unlink(missing_ok=True)
    process = subprocess.Popen([str(PAPERSCOPE), "serve", "--port", "0"], env=env_for(home), stdout=subprocess.DEVNULL)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 300:
        if process.poll() is not None:
            raise SystemExit(f"paperscope serve exited with {process.returncode}")
        try:
            data = json.loads(record.read_text())
            if data.get("pid") == process.pid:
                print(f"server up in {time.perf_counter() - t0:.1f} s at {data['url']}")
                return process, str(data["url"])
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("paperscope serve did not start in 300 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=None, help="an existing kb's data directory (default: temporary)")
    ap.add_argument("--queries", type=Path, default=ROOT / "eval" / "sample.jsonl")
    ap.add_argument("--cli", type=int, default=10, help="questions asked by fresh processes (each takes seconds)")
    ap.add_argument("--repeat", type=int, default=2, help="times every question is asked through HTTP")
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="paperscope-service-bench-"))
    ensure_corpus(home)
    questions = [q.query for q in load_queries(args.queries)]
    few = questions[: args.cli]
    env = env_for(home)
    rows: list[tuple[str, list[float]]] = []

    local = time_processes([[str(PAPERSCOPE), "ask", q, "--no-agent", "--json"] for q in few], env)
    rows.append(("fresh process: `paperscope ask --no-agent`", local))

    process, url = start_server(home)
    try:
        with httpx.Client(base_url=url, timeout=300) as http:
            http.post("/v1/chat", json={"query": questions[0], "no_agent": True}).raise_for_status()  # warm up

            def ask(query: str) -> float:
                t0 = time.perf_counter()
                http.post("/v1/chat", json={"query": query, "no_agent": True}).raise_for_status()
                return time.perf_counter() - t0

            remote = time_processes(
                [[str(PAPERSCOPE), "ask", q, "--no-agent", "--json", "--server", url] for q in few], env
            )
            rows.append(("fresh client process: `paperscope ask --no-agent --server URL`", remote))
            serial = [ask(q) for _ in range(args.repeat) for q in questions]
            rows.append(("server: POST /v1/chat, one at a time", serial))
            t0 = time.perf_counter()
            with ThreadPoolExecutor(CONCURRENT) as pool:
                parallel = list(pool.map(ask, [q for _ in range(args.repeat) for q in questions]))
            wall = time.perf_counter() - t0
            rows.append((f"server: POST /v1/chat, {CONCURRENT} clients at once", parallel))
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)

    print()
    print("| path | questions | p50 s | p95 s | mean s |")
    print("|---|---:|---:|---:|---:|")
    for label, values in rows:
        print(
            f"| {label} | {len(values)} | {pct(values, 0.5):.3f} | {pct(values, 0.95):.3f} | "
            f"{statistics.mean(values):.3f} |"
        )
    print()
    print(
        f"{CONCURRENT} clients at once: {len(parallel)} answers in {wall:.1f} s ({len(parallel) / wall:.1f} per second)"
    )
    print(f"speed-up of the median answer, server over a fresh process: {pct(local, 0.5) / pct(serial, 0.5):.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
