"""The wire format as pure functions (SPEC §2): canonical form and hash, envelope rules, the kinds table, hostile-input text."""
