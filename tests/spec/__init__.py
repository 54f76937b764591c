"""Black-box conformance to SPEC.md, one file per SPEC section.

| file | SPEC |
|---|---|
| ``test_wire_format.py`` | §2.1 framing, §2.2 envelope, §2.3 canonical serialization |
| ``test_chain.py`` | §2.4 hash chain, re-anchoring (§3), §10 ``--expect-head`` |
| ``test_vocabulary.py`` | §2.5 kinds and schema versions, §2.6 payloads |
| ``test_findings_and_exit_codes.py`` | §3 findings, warnings, exit codes; the verify report |
| ``test_repair.py`` | §4 repair |
| ``test_replay.py`` | §5 replay |
| ``test_grep.py`` | §6 grep |
| ``test_project.py`` | §7 project |
| ``test_raxol.py`` | §8 Raxol agent journals |
| ``test_writer.py`` | §9 the writer library |

Inputs are never built with ract's own writer or canonicalizer. Two
independent oracles build them: ``tests/independent_jcs.py`` (strings and
floats through the ``rfc8785`` package) behind ``builders.py``,
and ``jcs_from_scratch.py`` (no shared code at all) behind ``scratch_builders.py``,
which the tests use as ``scratch.``.
"""
