"""gRPC's own log lines (GOAWAY too_many_pings) stay off the terminal, unless PAPERSCOPE_LOG=debug."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from paperscope.settings_layers import load_settings

# A gRPC server and a client whose keepalive pings (every 100 ms, no call in flight) outpace what the
# server allows (one per 5 minutes): the server answers the third with GOAWAY too_many_pings, which the
# C core of the client logs to stderr, as it does when pymilvus pings Milvus Lite during a pause in `chat`.
# It prints "goaway" once the connection was dropped, so the test knows the message was provoked.
PROVOKE = """
import sys
import threading

if sys.argv[1] == "paperscope":
    import paperscope  # noqa: F401
from concurrent import futures

import grpc

server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
options = [
    ("grpc.keepalive_time_ms", 100),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=options)
ready, dropped = threading.Event(), threading.Event()


def watch(state):
    if state == grpc.ChannelConnectivity.READY:
        ready.set()
    elif ready.is_set():
        dropped.set()


channel.subscribe(watch, try_to_connect=True)
try:
    channel.unary_unary("/paperscope.Probe/Nothing")(b"", timeout=2)
except grpc.RpcError:
    pass
print("goaway" if dropped.wait(30) else "no goaway", flush=True)
channel.close()
server.stop(None)
"""


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any gRPC or paperscope logging setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRPC_", "PAPERSCOPE_"))}
    return {**env, **extra}


def test_grpc_goaway_lines_stay_off_stderr_unless_debugging() -> None:
    runs = {
        "grpc alone": subprocess.Popen(
            [sys.executable, "-c", PROVOKE, "plain"], env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ),
        "paperscope": subprocess.Popen(
            [sys.executable, "-c", PROVOKE, "paperscope"],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ),
        "paperscope, PAPERSCOPE_LOG=debug": subprocess.Popen(
            [sys.executable, "-c", PROVOKE, "paperscope"],
            env=clean_env(PAPERSCOPE_LOG="debug"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ),
    }
    out = {name: tuple(s.decode() for s in proc.communicate(timeout=60)) for name, proc in runs.items()}
    for name, (stdout, stderr) in out.items():
        assert stdout.strip() == "goaway", (name, stdout, stderr)  # the server really sent GOAWAY in each run
    # Without paperscope, gRPC prints it: the provocation is real on this gRPC build...
    assert "too_many_pings" in out["grpc alone"][1]
    # ...with paperscope imported first, nothing of gRPC's reaches stderr...
    assert out["paperscope"][1] == "", out["paperscope"][1]
    # ...and PAPERSCOPE_LOG=debug leaves gRPC's logging as it is.
    assert "GOAWAY" in out["paperscope, PAPERSCOPE_LOG=debug"][1]


# Records GRPC_VERBOSITY at the moment grpc and pymilvus are first imported, whoever imports them.
WHEN_IMPORTED = """
import os, sys, json
seen = {}
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ("grpc", "pymilvus") and name not in seen:
            seen[name] = os.environ.get("GRPC_VERBOSITY")
        return None
sys.meta_path.insert(0, Spy())
import paperscope.cli
from paperscope.backend_logs import quiet_backend_loggers
quiet_backend_loggers()
from paperscope.rag.store import PaperStore  # what imports pymilvus (and grpc under it), when first asked for
print(json.dumps(seen))
"""


def test_grpc_is_told_to_be_quiet_before_pymilvus_or_grpc_is_imported() -> None:
    result = subprocess.run(
        [sys.executable, "-c", WHEN_IMPORTED], env=clean_env(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '{"pymilvus": "NONE", "grpc": "NONE"}'
    user_set = subprocess.run(
        [sys.executable, "-c", WHEN_IMPORTED],
        env=clean_env(GRPC_VERBOSITY="ERROR"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert user_set.stdout.strip() == '{"pymilvus": "ERROR", "grpc": "ERROR"}'  # what the user set is kept


def test_the_backend_python_loggers_are_silenced_unless_debugging(monkeypatch: pytest.MonkeyPatch) -> None:
    from paperscope.backend_logs import BACKEND_LOGGERS, quiet_backend_loggers

    for name in BACKEND_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    monkeypatch.setenv("PAPERSCOPE_LOG", "debug")
    quiet_backend_loggers()
    assert logging.getLogger("milvus_lite.server_manager").getEffectiveLevel() <= logging.WARNING
    monkeypatch.delenv("PAPERSCOPE_LOG")
    quiet_backend_loggers()
    for name in (*BACKEND_LOGGERS, "milvus_lite.server_manager", "grpc._cython.cygrpc"):
        assert logging.getLogger(name).getEffectiveLevel() > logging.CRITICAL, name


def test_paperscope_log_is_a_known_variable_and_a_bad_level_is_said(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PAPERSCOPE_LOG", "debug")
    with caplog.at_level(logging.WARNING, logger="paperscope"):
        load_settings()
    assert not caplog.records  # no "unknown setting PAPERSCOPE_LOG"
    monkeypatch.setenv("PAPERSCOPE_LOG", "loud")
    with caplog.at_level(logging.WARNING, logger="paperscope"):
        load_settings()
    said = [r.getMessage() for r in caplog.records]
    assert said == ["PAPERSCOPE_LOG='loud' is not one of warning, debug; using warning"]
