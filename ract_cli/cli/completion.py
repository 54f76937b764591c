"""``ract --show-completion [SHELL]`` and ``ract --install-completion [SHELL]``: Typer's scripts, any shell named.

Typer's own options take no value: they detect the shell from the process
tree, so ``ract --show-completion zsh`` run from bash printed bash's script,
and a process tree without a shell (CI, an editor) printed nothing useful.
Here a shell named after the option wins; else the detected one; else the
basename of ``$SHELL``. What is completed (commands, options, ``--kind``'s
kinds, every choice) is Typer's, through ``_RACT_COMPLETE``.
"""

from __future__ import annotations

import os

import typer
from typer import _completion_shared as shared  # typer is pinned to 0.28.x (pyproject.toml)

from ract_cli.cli.limits import COMPLETE_VAR
from ract_cli.cli.render import markup_safe, stderr_console

FLAGS = ("--show-completion", "--install-completion")
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def completion_request(args: list[str]) -> int | None:
    """Handle ``args`` when they ask for completion (return the exit code); None when they do not."""
    if not args or args[0] not in FLAGS or len(args) > 2:
        return None
    shell = args[1] if len(args) == 2 else (shared._get_shell_name() or os.path.basename(os.environ.get("SHELL", "")))
    if shell not in SHELLS:
        stderr_console().print(
            f"ract: no completion script for shell {markup_safe(repr(shell))}: name one of {', '.join(SHELLS)} "
            f"(ract {args[0]} bash)"
        )
        return 2
    if args[0] == "--show-completion":
        typer.echo(shared.get_completion_script(prog_name="ract", complete_var=COMPLETE_VAR, shell=shell))
        return 0
    shell, path = shared.install(shell=shell, prog_name="ract", complete_var=COMPLETE_VAR)
    stderr_console().print(f"{shell} completion installed in {markup_safe(str(path))}; it works in a new shell")
    return 0
