"""Seeded generators of logs and journals (fixtures, goldens, benchmarks). Not used by any command."""
