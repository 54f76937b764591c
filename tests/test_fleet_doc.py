"""docs/fleet.md is true: its generated blocks match the one definition, and every recipe runs.

- The column tables (DuckDB, Spark and Trino types) and the Trino DDL in
  docs/fleet.md are rendered here from ``ract_cli.export.tables``, the one
  definition of the three tables; the doc must hold exactly that text
  between its marker comments (like the schema-drift tests of test_docs.py).
- Every ```sql block between ``<!-- recipes -->`` and ``<!-- /recipes -->``
  is run with the real ``ract trace sql --format jsonl`` over a copy of
  ``fixtures/runs``: it must exit with the inputs' verification code (the
  code ``ract trace verify`` gives them; never 2, a rejected query), and print
  exactly the output block that follows it in the doc.

Regenerate the blocks and the recorded outputs after changing the tables, the
fixtures or a recipe::

    .venv/bin/python tests/test_fleet_doc.py --write

``scripts/spark_check.py`` (``make spark-check``) imports this module for the
recipe parser and the Spark type names.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ract_cli.export.tables import PARTITION_COLUMN, TABLES, Table  # noqa: E402

DOC = ROOT / "docs" / "fleet.md"
FIXTURE_RUNS = ROOT / "fixtures" / "runs"
RACT = [sys.executable, "-m", "ract_cli"]
#: what an output block holds when the recipe returns no row (an empty code block reads as a mistake)
NO_ROWS = "(no rows)\n"

#: DuckDB type (tables.py) -> the type Spark reads it as (``spark.read.parquet`` schema, SQL names)
SPARK_TYPES = {
    "VARCHAR": "string",
    "BIGINT": "bigint",
    "INTEGER": "int",
    "BOOLEAN": "boolean",
    "TIMESTAMPTZ": "timestamp",
    "DATE": "date",
}
#: DuckDB type -> the column type to declare in a Trino (Hive connector) external table
TRINO_TYPES = {
    "VARCHAR": "varchar",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "TIMESTAMPTZ": "timestamp",
    "DATE": "date",
}


# --- rendering the generated blocks ---------------------------------------------------------------


def render_tables() -> str:
    """The three tables as Markdown, with each column's type in DuckDB, Spark and Trino."""
    out: list[str] = []
    for table in TABLES:
        where = f"`OUT/{table.name}/`"
        if table.name == "events":
            where += f", partitioned by `{PARTITION_COLUMN}`"
        out += [f"### `{table.name}` ({where}): {table.meaning}", ""]
        out += ["| column | DuckDB (`ract trace sql`) | Spark | Trino (Hive) | meaning |", "|---|---|---|---|---|"]
        for c in table.columns:
            note = " *(beyond SPEC §12.1)*" if c.extra else ""
            out.append(f"| `{c.name}` | {c.type} | {SPARK_TYPES[c.type]} | {TRINO_TYPES[c.type]} | {c.meaning}{note} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def trino_ddl(table: Table, location: str = "s3://BUCKET/OUT") -> str:
    cols = ",\n".join(f'  "{c.name}" {TRINO_TYPES[c.type]}' for c in table.columns)
    props = ["  format = 'PARQUET'", f"  external_location = '{location}/{table.name}'"]
    if PARTITION_COLUMN in table.names:
        # Trino wants the partition column last, as it is in tables.py.
        assert table.columns[-1].name == PARTITION_COLUMN
        props.append(f"  partitioned_by = ARRAY['{PARTITION_COLUMN}']")
    return f"CREATE TABLE hive.ract.{table.name} (\n{cols}\n)\nWITH (\n" + ",\n".join(props) + "\n);\n"


def render_trino_ddl() -> str:
    """The ```sql block of Trino DDL: one external table per table directory."""
    parts = ["CREATE SCHEMA IF NOT EXISTS hive.ract;\n"]
    parts += [trino_ddl(t) for t in TABLES]
    parts.append("CALL hive.system.sync_partition_metadata('ract', 'events', 'ADD');\n")
    return "```sql\n" + "\n".join(parts) + "```\n"


GENERATED = {"fleet-tables": render_tables, "trino-ddl": render_trino_ddl}


def block(doc: str, name: str) -> tuple[int, int]:
    """Start and end offsets of the text between ``<!-- name: ... -->`` and ``<!-- /name -->``."""
    m = re.search(rf"<!-- {re.escape(name)}(?::[^>]*)? -->\n", doc)
    assert m, f"docs/fleet.md has no <!-- {name} --> marker"
    end = doc.index(f"<!-- /{name} -->", m.end())
    return m.end(), end


# --- the recipes ------------------------------------------------------------------------------------


@dataclass
class Recipe:
    title: str
    sql: str
    output: str  # the recorded stdout (NO_ROWS for none)
    span: tuple[int, int]  # offsets of the output block's body in the doc


_RECIPE = re.compile(
    r"^#{2,4} (?P<title>[^\n]+)\n(?:(?!^#{2,4} |^```)[^\n]*\n)*?"
    r"^```sql\n(?P<sql>.*?)^```\n\n?^```jsonl?\n(?P<out>.*?)^```\n",
    re.M | re.S,
)


def recipes(doc: str, section: str = "recipes") -> list[Recipe]:
    """Every recipe of a section: a heading, a ```sql block, then its recorded ```jsonl output."""
    start, end = block(doc, section)
    found = []
    for m in _RECIPE.finditer(doc, start, end):
        found.append(Recipe(m["title"].strip(), m["sql"], m["out"], (m.start("out"), m.end("out"))))
    return found


def sql_blocks(doc: str, section: str = "recipes") -> list[str]:
    start, end = block(doc, section)
    return re.findall(r"^```sql\n(.*?)^```\n", doc[start:end], re.M | re.S)


def copy_fixtures(dest: Path) -> Path:
    runs = dest / "runs"
    shutil.copytree(FIXTURE_RUNS, runs)
    return runs


def run_sql(sql: str, cwd: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RACT, "trace", "sql", "--format", "jsonl", sql, *paths],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=_env(),
    )


def verify_code(cwd: Path, *paths: str) -> int:
    return subprocess.run(
        [*RACT, "trace", "verify", "-q", *paths], cwd=cwd, capture_output=True, check=False, env=_env()
    ).returncode


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def write(doc_path: Path = DOC) -> None:
    """Rewrite the generated blocks and every recipe's recorded output (run over fixtures/runs)."""
    doc = doc_path.read_text(encoding="utf-8")
    for name, render in GENERATED.items():
        start, end = block(doc, name)
        doc = doc[:start] + render() + doc[end:]
    with tempfile.TemporaryDirectory() as tmp:
        copy_fixtures(Path(tmp))
        for r in reversed(recipes(doc)):
            proc = run_sql(r.sql, Path(tmp), "runs")
            if proc.returncode == 2:
                raise SystemExit(f"recipe {r.title!r} was rejected:\n{proc.stderr}")
            out = proc.stdout or NO_ROWS
            doc = doc[: r.span[0]] + out + doc[r.span[1] :]
    doc_path.write_text(doc, encoding="utf-8")


# --- the tests --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def fixture_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    tmp = tmp_path_factory.mktemp("fleet-doc")
    copy_fixtures(tmp)
    return tmp, verify_code(tmp, "runs")


STALE = "docs/fleet.md is stale: run `.venv/bin/python tests/test_fleet_doc.py --write`"


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_block_is_current(doc: str, name: str) -> None:
    start, end = block(doc, name)
    assert doc[start:end] == GENERATED[name](), STALE


def test_every_column_of_the_definition_is_in_the_doc(doc: str) -> None:
    start, end = block(doc, "fleet-tables")
    for table in TABLES:
        for c in table.columns:
            assert f"| `{c.name}` | {c.type} |" in doc[start:end]


def test_ten_recipes_each_with_its_output(doc: str) -> None:
    found = recipes(doc)
    # every ```sql block of the section is a recipe with a recorded output: none is skipped
    assert len(found) == len(sql_blocks(doc)) >= 10
    titles = " ".join(r.title for r in found)
    for question in ("dispose_unsuccessful", "p99", "required predicate failed"):
        assert question in titles


def test_every_recipe_runs_over_the_fixtures(doc: str, fixture_copy: tuple[Path, int]) -> None:
    cwd, code = fixture_copy
    assert code not in (0, 2)  # the fixtures hold a tampered and a torn log: the exit code is tested
    problems = []
    for r in recipes(doc):
        proc = run_sql(r.sql, cwd, "runs")
        if proc.returncode != code:
            problems.append(f"{r.title}: exit {proc.returncode}, want {code}\n{proc.stderr}")
        elif (proc.stdout or NO_ROWS) != r.output:
            problems.append(f"{r.title}: output differs from the doc ({STALE})\n{proc.stdout}")
    assert not problems, "\n\n".join(problems)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_fleet_doc.py --write")
    write()
    print(f"wrote {DOC.relative_to(ROOT)}")
