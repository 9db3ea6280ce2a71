"""The architecture as the imports draw it: parser <- sources <- rag <- answer <- agent <- surfaces, one way, no cycles.

Every import counts, at the top of a module, inside a function or under `TYPE_CHECKING`: a deferred import is
still a dependency, only a later one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: What every stage may use: errors, settings, logging, cancellation, the worker sandbox, prompts, the chat model.
BASE = {"", "errors", "backend_logs", "cancellation", "isolation", "config", "settings_layers", "prompts", "llm"}
#: The stages in import order: each may import the base and the stages before it, never one after it.
STAGES = ["parser", "sources", "rag", "answer", "agent"]
#: The drivers: every way in (Python's operations, the CLI, chat, the service, the page, replays, doctor).
SURFACES = {"operations", "chat", "eval", "doctor", "service", "web", "cli", "terminal"}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name ("paperscope.rag.engine")."""
    out: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(["paperscope", *parts])] = path
    return out


def _imported(module: str, path: Path) -> Iterator[str]:
    """The dotted names `module` imports (absolute or relative), as written."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package
                for _ in range(node.level - 1):
                    up = up.rpartition(".")[0]
                base = f"{up}.{base}" if base else up
            yield from (f"{base}.{a.name}" for a in node.names)


def _graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a name resolves to the longest module it falls in)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for name in _imported(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith("paperscope") and name != module:
                graph[module].add(name)
    return graph


def _part(module: str) -> str:
    """The top-level part of the package a module belongs to ("" for the package itself)."""
    return module.split(".")[1] if "." in module else ""


def _layer(part: str) -> int:
    if part in BASE:
        return 0
    if part in STAGES:
        return 1 + STAGES.index(part)
    assert part in SURFACES, f"src/{part} is in no layer: add it to BASE, STAGES or SURFACES in {__file__}"
    return 1 + len(STAGES)


def test_every_part_of_src_has_a_layer() -> None:
    for module in _modules():
        _layer(_part(module))


def test_imports_point_down_the_stages() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if _layer(_part(target)) > _layer(_part(module))
    ]
    assert not upward, "imports against the stages:\n" + "\n".join(sorted(upward))


def test_no_module_imports_itself_back() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_sees_imports_inside_functions() -> None:
    # rag/embeddings.py loads its ONNX runtime only when a question is embedded: the edge must still be seen.
    assert "paperscope.rag.onnx_model" in _graph()["paperscope.rag.embeddings"]
