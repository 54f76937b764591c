"""Type names for parsed JSON, so signatures say what a dict is (mypy --strict forbids bare ``dict``)."""

from typing import Any, TypeAlias

#: any JSON object as parsed (keys are strings; values are JSON values)
JSONObject: TypeAlias = dict[str, Any]
#: one parsed event: the nine-key envelope of SPEC §2.2, or a journal record (SPEC §8)
Event: TypeAlias = dict[str, Any]
#: an event's ``payload`` object
Payload: TypeAlias = dict[str, Any]
#: a report or result as the JSON output formats write it
Report: TypeAlias = dict[str, Any]
