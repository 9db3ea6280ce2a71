"""A Milvus server for the tests: `milvus-lite server` on 127.0.0.1, or Milvus standalone in Docker on request.

`milvus-lite server` (shipped by the milvus-lite package) serves the Milvus gRPC API that a Milvus
server speaks, so paperscope's server code path (an http:// URI, no Lite file, no Lite lock, no
Lite flushing) runs on every test run without Docker. It is Milvus Lite's engine behind that API,
so what Milvus Lite lacks is lacked here too (see `MILVUS_LITE_SERVER_GAPS`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.milvus.yml"
# Not PAPERSCOPE_*: paperscope warns about PAPERSCOPE_* variables it does not read.
DOCKER_ENV = "TEST_MILVUS_DOCKER"
#: Features of Milvus proper that `milvus-lite server` does not have; tests needing one skip with its text.
MILVUS_LITE_SERVER_GAPS = {
    "filter_params": (
        "milvus-lite server does not implement templated filters: it ignores filter_params and rejects "
        "the {placeholder} expression"
    ),
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def is_milvus_lite_server(uri: str, token: str = "") -> bool:
    """True when the server at `uri` is `milvus-lite server` (it reports its version as milvus_lite-X)."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, token=token)
    try:
        return str(client.get_server_version()).startswith("milvus_lite")
    finally:
        client.close()


def wait_for_milvus(uri: str, timeout: float, process: subprocess.Popen[bytes] | None = None, log: str = "") -> None:
    """Return once the server at `uri` lists its collections; raise naming the last error (and the log) if not."""
    from pymilvus import MilvusClient

    deadline, last = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the Milvus server for {uri} exited with code {process.returncode}{log_tail(log)}")
        try:
            client = MilvusClient(uri=uri, timeout=2)
            try:
                client.list_collections()
            finally:
                client.close()
            return
        except Exception as exc:  # not listening yet: pymilvus raises MilvusException, grpc errors, OSError
            last = str(exc)
            time.sleep(0.3)
    raise RuntimeError(f"Milvus at {uri} did not answer within {timeout:.0f}s: {last}{log_tail(log)}")


def connect(uri: str, token: str = "", attempts: int = 3) -> Any:
    """A MilvusClient on `uri`, connecting again when the server turns a connection away: the Lite server sends
    GOAWAY ("Too many pings") to a process whose earlier clients' keepalive pings outpaced its policy."""
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    for attempt in range(attempts):
        try:
            return MilvusClient(uri=uri, token=token)
        except MilvusException:
            if attempt == attempts - 1:
                raise
            time.sleep(1.0 + attempt)
    raise AssertionError("unreachable")


def log_tail(path: str, lines: int = 20) -> str:
    """The last lines of a server log, for an error message ("" when there is none)."""
    if not path or not Path(path).is_file():
        return ""
    tail = Path(path).read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- {path} (last {len(tail)} lines) ---\n" + "\n".join(tail) if tail else ""


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Terminate the process, kill it if it is still there after `grace` seconds, and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def milvus_lite_server(data_dir: Path, startup_timeout: float = 60.0, attempts: int = 3) -> Iterator[str]:
    """Run `milvus-lite server` on a free 127.0.0.1 port over `data_dir`; yields its http:// URI.

    The server is the milvus-lite of the interpreter running the tests (its `milvus-lite` console script
    may sit in another venv's bin when this venv chains to one, so the script is not looked up). It is
    stopped on exit (terminate, then kill), and on Linux it also dies with the test process.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    log = str(data_dir.parent / f"{data_dir.name}.log")
    for attempt in range(1, attempts + 1):
        port = free_port()
        uri = f"http://127.0.0.1:{port}"
        # This file run as a script: `milvus-lite server` that also dies with the test process (see _serve).
        cmd = [sys.executable, __file__, str(os.getpid()), "server", "--data-dir", str(data_dir)]
        cmd += ["--host", "127.0.0.1", "--port", str(port)]
        with open(log, "ab") as out:
            process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            try:
                wait_for_milvus(uri, startup_timeout, process, log)
            except RuntimeError:
                # Another process may have taken the port between free_port() and the bind: try another.
                if process.poll() is not None and attempt < attempts:
                    continue
                raise
            yield uri
            return
        finally:
            stop(process)


@contextmanager
def docker_milvus() -> Iterator[str]:
    """Milvus standalone (etcd + MinIO) from docker-compose.milvus.yml via testcontainers; yields its URI."""
    import yaml
    from testcontainers.compose import DockerCompose

    services = yaml.safe_load(COMPOSE_FILE.read_text()).get("services") or {}
    service = next((str(n) for n, s in services.items() if any("19530" in str(p) for p in s.get("ports") or [])), None)
    if service is None:
        raise RuntimeError(f"{COMPOSE_FILE.name}: no service publishes Milvus' port 19530")
    compose = DockerCompose(context=str(ROOT), compose_file_name=COMPOSE_FILE.name, wait=True)
    compose.start()
    try:
        host, port = compose.get_service_host_and_port(service, 19530)
        uri = f"http://{host or '127.0.0.1'}:{port}"
        wait_for_milvus(uri, 240.0)
        yield uri
    finally:
        with suppress(Exception):
            compose.stop()


@contextmanager
def milvus_server(data_dir: Path) -> Iterator[str]:
    """MILVUS_URI when it names a server; Docker when TEST_MILVUS_DOCKER=1; else `milvus-lite server` on `data_dir`."""
    uri = os.environ.get("MILVUS_URI") or ""
    if uri.startswith(("http://", "https://", "tcp://")):  # a Lite path (kb.db) is no server: start one
        yield uri
    elif os.environ.get(DOCKER_ENV) == "1":
        with docker_milvus() as uri:
            yield uri
    else:
        with milvus_lite_server(data_dir) as uri:
            yield uri


def _serve(argv: list[str]) -> int:
    """`milvus-lite server ARGS` for the test process whose pid is argv[0], dying with it (Linux).

    PR_SET_PDEATHSIG has the kernel SIGTERM this process when its parent exits, even by SIGKILL, so a
    killed test run never leaves a server behind.
    """
    parent, args = int(argv[0]), argv[1:]
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:
        return 1  # the test process died before the line above took effect
    from milvus_lite.cmdline import main

    return main(args)


if __name__ == "__main__":
    # Run as a script, tests/ leads sys.path; its packages (rag, parser, agent, eval) must shadow nothing.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    sys.exit(_serve(sys.argv[1:]))
