"""Type names for parsed JSON, so signatures say what a dict is (mypy --strict forbids bare ``dict``).

``Any`` is named as a string: at run time an alias is the plain ``dict[str, 'Any']`` (it still takes
``| None``), and ``typing``, whose import costs every command's start-up ~5 ms, is not imported.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported at run time: ~5 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any, TypeAlias

#: any JSON object as parsed (keys are strings; values are JSON values)
JSONObject: TypeAlias = dict[str, "Any"]
#: one parsed event: the nine-key envelope of SPEC §2.2, or a journal record (SPEC §8)
Event: TypeAlias = dict[str, "Any"]
#: an event's ``payload`` object
Payload: TypeAlias = dict[str, "Any"]
#: a report or result as the JSON output formats write it
Report: TypeAlias = dict[str, "Any"]
