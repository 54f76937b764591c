"""``ract trace verify`` as a library call (SPEC §3)."""

from ract_cli.verify.verifier import VerifyOptions, verify_file, verify_paths

__all__ = ["VerifyOptions", "verify_file", "verify_paths"]
