"""The library never imports the CLI stack; the CLI is a thin layer over it."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import ract_cli

LIBRARY_MODULES = sorted(
    f"ract_cli.{m.name}" for m in pkgutil.iter_modules(ract_cli.__path__) if m.name not in ("cli", "__main__")
)


def test_there_are_library_modules_to_check():
    assert "ract_cli.reader" in LIBRARY_MODULES and "ract_cli.writer" in LIBRARY_MODULES


def test_library_modules_do_not_import_typer_or_rich():
    code = (
        "import importlib, sys\n"
        f"for name in {LIBRARY_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"library pulled in CLI modules: {out.stdout.strip()}"


def test_library_source_never_mentions_the_cli_stack():
    root = Path(ract_cli.__file__).parent
    offenders = []
    for path in root.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) and any(
                f" {mod}" in stripped or f"{mod}." in stripped for mod in ("typer", "rich")
            ):
                offenders.append(f"{path.name}: {stripped}")
    assert offenders == []


def test_every_public_name_resolves_lazily():
    code = (
        "import sys, ract_cli\n"
        "assert 'ract_cli.raxol' not in sys.modules, 'package import must stay lazy'\n"
        "assert sorted(ract_cli.__all__) == sorted(ract_cli._EXPORTS)\n"
        "print(sorted(type(getattr(ract_cli, n)).__name__ for n in ract_cli.__all__)[:1])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    missing = [n for n in ract_cli.__all__ if getattr(ract_cli, n, None) is None]
    assert missing == []
