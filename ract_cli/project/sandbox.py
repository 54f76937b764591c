"""The sandbox: grants, denials, unenforced sandboxes and what environment scrubbing let through."""

from __future__ import annotations

from ract_cli.format.json_types import Event, JSONObject, Payload
from ract_cli.project.flags import Flags
from ract_cli.project.grouping import FoldRules, ListedRules, group, listed, past_caps
from ract_cli.project.handler import Handler
from ract_cli.project.tallies import Items, saturating_sum
from ract_cli.project.values import as_int, text
from ract_cli.read.handles import OpenHandle


class SandboxTally:
    """``sandbox.*`` events; an unenforced sandbox and a gap in the deny surface are audit flags."""

    def __init__(self, flags: Flags, max_items: int) -> None:
        self.flags = flags
        self.granted = self.denied = self.env_scrubbed = self.scrubbed_total = 0
        self.never_passthrough_total = self.credential_unblocked_total = 0
        self.unenforced = Items(max_items)
        self.never_passthrough = Items(max_items)
        self.credential_unblocked = Items(max_items)

    def handlers(self) -> dict[str, Handler]:
        return {
            "sandbox.granted": self._granted,
            "sandbox.denied": self._denied,
            "sandbox.unenforced": self._unenforced,
            "sandbox.env_scrubbed": self._env_scrubbed,
        }

    def fold_rules(self) -> FoldRules:
        """The native fold's groups of the counted kinds (``project.grouping``); the flagged ones are left."""
        return {
            "sandbox.granted": (group(), lambda g: self._granted_n(g.n)),
            "sandbox.denied": (group(), lambda g: self._denied_n(g.n)),
        }

    def fold_listed(self) -> ListedRules:
        """An unenforced sandbox, once its list and the flags are full: counted."""
        return {"sandbox.unenforced": past_caps(listed(), self.unenforced, self.flags)}

    def _granted(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._granted_n(1)

    def _granted_n(self, n: int) -> None:
        self.granted += n

    def _denied(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self._denied_n(1)

    def _denied_n(self, n: int) -> None:
        self.denied += n

    def _unenforced(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        reason = text(payload.get("reason"))
        self.unenforced.add(
            {
                "line": line,
                "event_id": event["id"],
                "step_id": event.get("step_id"),
                "manifest_digest": text(payload.get("manifest_digest")),
                "reason": reason,
            }
        )
        self.flags.flag("SANDBOX_UNENFORCED", line, event, f"sandbox not enforced: {reason or 'no reason given'}")

    def _env_scrubbed(self, event: Event, payload: Payload, line: int, ts: int, paired: OpenHandle | None) -> None:
        self.env_scrubbed += 1
        scrubbed = as_int(payload.get("scrubbed_count"))
        if scrubbed is not None and scrubbed > 0:
            self.scrubbed_total = saturating_sum(self.scrubbed_total, scrubbed)
        denied = as_int(payload.get("never_passthrough_denied"))
        unblocked = as_int(payload.get("credential_shaped_unblocked_count"))
        backend = text(payload.get("backend"))
        if denied is not None and denied > 0:
            self.never_passthrough_total = saturating_sum(self.never_passthrough_total, denied)
            self.never_passthrough.add({"line": line, "event_id": event["id"], "count": denied, "backend": backend})
            self.flags.flag(
                "NEVER_PASSTHROUGH_DENIED",
                line,
                event,
                f"never_passthrough_denied = {denied}: the manifest declared a credential-shaped name",
            )
        if unblocked is not None and unblocked > 0:
            self.credential_unblocked_total = saturating_sum(self.credential_unblocked_total, unblocked)
            self.credential_unblocked.add(
                {"line": line, "event_id": event["id"], "count": unblocked, "backend": backend}
            )
            self.flags.flag(
                "CREDENTIAL_SHAPED_UNBLOCKED",
                line,
                event,
                f"credential_shaped_unblocked_count = {unblocked}: credential-shaped names passed through",
            )

    def section(self) -> JSONObject:
        """The report's ``sandbox`` block."""
        return {
            "granted": self.granted,
            "denied": self.denied,
            "env_scrubbed": self.env_scrubbed,
            "scrubbed_total": self.scrubbed_total,
            "unenforced": self.unenforced.to_dict(),
            "never_passthrough_denied": dict(self.never_passthrough.to_dict(), total=self.never_passthrough_total),
            "credential_shaped_unblocked": dict(
                self.credential_unblocked.to_dict(), total=self.credential_unblocked_total
            ),
        }
