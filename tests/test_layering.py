"""The architecture (docs/architecture.md): layers import only downward, no cycles, no CLI stack in the library."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import ract_cli

ROOT = Path(ract_cli.__file__).parent

#: layer of each top-level part of ract_cli; a module may import its own part or a lower layer
LAYERS = {
    "errors": 0,
    "records": 0,
    "atomic": 1,
    "findings": 1,
    "format": 2,
    "read": 3,
    "_core": 3,
    "dialects": 4,
    "proofs": 5,  # checkpoints and proofs (SPEC §14): below the writer, which seals as it writes
    "writer": 6,
    "verify": 7,
    "repair": 7,
    "replay": 7,
    "grep": 7,
    "project": 7,
    "diff": 7,
    "export": 7,
    "sql": 7,
    "otel": 7,
    "testing": 8,
    "cli": 9,
    "__main__": 10,
    "__init__": 10,  # the package's lazy names may point anywhere but the CLI
}
#: commands that build on another command's library, each edge on purpose (docs/architecture.md)
COMMAND_EDGES = {
    ("export", "project"),  # the runs table is project's report, computed on the same pass
    ("sql", "export"),  # sql reads logs into export's tables
}


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if ".venv" not in p.parts)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    name = ".".join(rel.parts)
    return name.removesuffix(".__init__") if name != "ract_cli.__init__" else "ract_cli.__init__"


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, at top level) for every ract_cli import of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (use ract_cli.… so the layer shows)"
            mods = [node.module or ""]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        else:
            continue
        for mod in mods:
            if mod == "ract_cli" and isinstance(node, ast.ImportFrom):
                # a lazy top-level name stands for the module it comes from
                for alias in node.names:
                    if alias.name.startswith("__"):
                        continue  # the package's own metadata (__version__)
                    target = ract_cli._EXPORTS.get(alias.name)
                    found.append((node.lineno, f"ract_cli.{target}" if target else "ract_cli", id(node) in top))
            elif mod == "ract_cli" or mod.startswith("ract_cli."):
                found.append((node.lineno, mod, id(node) in top))
    return found


def test_every_part_has_a_layer():
    parts = {_part(_name(p)) for p in _modules()}
    assert parts - set(LAYERS) == set(), "a new top-level part needs a layer in LAYERS and docs/architecture.md"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_go_down(path):
    me = _part(_name(path))
    bad = []
    for line, mod, _ in _imports(path):
        other = _part(mod)
        if other == me or (other in ("errors", "findings") and me not in ("errors", "findings")):
            continue
        if me == "__init__" and other != "cli":
            continue
        if LAYERS[other] < LAYERS[me] or (me, other) in COMMAND_EDGES:
            continue
        bad.append(f"line {line}: {mod} ({other}, layer {LAYERS[other]}) from layer {LAYERS[me]}")
    assert bad == []


def test_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {}
    names = {_name(p) for p in _modules()}
    for path in _modules():
        deps = set()
        for _, mod, top in _imports(path):
            if not top:
                continue
            deps.add(mod)
            deps.update(
                m for m in names if mod.startswith(m + ".") and m != "ract_cli.__init__"
            )  # parent packages run first
        me = _name(path)
        # a package's own ancestors are already importing when it runs: not an edge of a cycle
        graph[me] = {d for d in deps if d in names and d != me and not me.startswith(d + ".")}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycle.extend([*trail[trail.index(dep) :], dep] if dep in trail else [node, dep])
                return True
            if dep not in state and visit(dep, [*trail, dep]):
                return True
        state[node] = 2
        return False

    for start in sorted(graph):
        if start not in state and visit(start, [start]):
            break
    assert cycle == []


def test_library_modules_do_not_import_typer_or_rich():
    library = sorted(_name(p) for p in _modules() if _part(_name(p)) not in ("cli", "__main__", "__init__", "testing"))
    assert "ract_cli.read.reader" in library and "ract_cli.writer.event_writer" in library
    code = (
        "import importlib, sys\n"
        f"for name in {library!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"library pulled in CLI modules: {out.stdout.strip()}"


def test_library_source_never_mentions_the_cli_stack():
    offenders = []
    for path in _modules():
        if _part(_name(path)) in ("cli", "__main__"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) and any(
                f" {mod}" in stripped or f"{mod}." in stripped for mod in ("typer", "rich")
            ):
                offenders.append(f"{path.relative_to(ROOT)}: {stripped}")
    assert offenders == []


def test_every_public_name_resolves_lazily():
    code = (
        "import sys, ract_cli\n"
        "assert 'ract_cli.dialects' not in sys.modules, 'package import must stay lazy'\n"
        "assert sorted(ract_cli.__all__) == sorted(ract_cli._EXPORTS)\n"
        "print(sorted(type(getattr(ract_cli, n)).__name__ for n in ract_cli.__all__)[:1])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    missing = [n for n in ract_cli.__all__ if getattr(ract_cli, n, None) is None]
    assert missing == []
