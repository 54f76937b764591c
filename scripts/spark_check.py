"""``make spark-check``: Spark reads an export as it is, and answers the recipes as ``ract trace sql`` does.

1. copies ``fixtures/runs`` to a temporary directory and exports it with
   ``ract trace export --format parquet``;
2. reads ``OUT/events``, ``OUT/runs`` and ``OUT/findings`` with pyspark in
   local mode (``spark.read.parquet``) and checks each table's columns and
   Spark types against docs/fleet.md's table (rendered from
   ``ract_cli/export/tables.py``), and its row count against ``ract trace sql``;
3. runs every Spark SQL recipe of docs/fleet.md (the ``spark-recipes``
   section) in Spark, and the DuckDB recipe of the same number with
   ``ract trace sql`` over the logs, and compares the answers row by row.

Exit 0 when everything is equal, 1 when something differs, 2 when pyspark or
Java is missing (``.venv/bin/pip install pyspark``; Java 17 or newer).
Not part of ``make test``: Spark's start-up alone takes ~10-20 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RACT = [sys.executable, "-m", "ract_cli"]


def _fleet_doc() -> Any:
    """tests/test_fleet_doc.py: the recipe parser and the Spark type names (one place for both)."""
    sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location("fleet_doc", ROOT / "tests" / "test_fleet_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def numbered(recipes: list[Any]) -> dict[int, Any]:
    out = {}
    for r in recipes:
        m = re.match(r"(\d+)\.", r.title)
        if m:
            out[int(m[1])] = r
    return out


def spark_recipes(doc: str, fd: Any) -> dict[int, tuple[str, str]]:
    """``{number: (title, sql)}`` of the ``spark-recipes`` section: a ``### N. title`` heading, then ```sql."""
    start, end = fd.block(doc, "spark-recipes")
    found = {}
    for m in re.finditer(r"^#{2,4} (\d+)\. ([^\n]*)\n.*?^```sql\n(.*?)^```\n", doc[start:end], re.M | re.S):
        found[int(m[1])] = (m[2].strip(), m[3])
    return found


def plain(value: Any) -> Any:
    """A Spark value as ract's JSON lines would write it (docs/sql.md, Output)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if hasattr(value, "is_finite"):  # Decimal
        return float(value)
    return value


def same(a: Any, b: Any) -> bool:
    """Equal, numbers by value (Spark's percentile is a double where DuckDB's is an integer)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def ract_rows(sql: str, cwd: Path, path: str) -> tuple[list[dict], int]:
    proc = subprocess.run(
        [*RACT, "trace", "sql", "--format", "jsonl", sql, path],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 2:
        raise SystemExit(f"spark-check: ract trace sql rejected a recipe:\n{proc.stderr}")
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.returncode


def java_version() -> str:
    java = shutil.which("java")
    if java is None:
        return "none"
    proc = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    return (proc.stderr or proc.stdout).splitlines()[0] if (proc.stderr or proc.stdout) else "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temporary directory")
    args = parser.parse_args(argv)
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError as exc:
        print(f"spark-check: pyspark is not installed ({exc}): .venv/bin/pip install pyspark", file=sys.stderr)
        return 2
    if shutil.which("java") is None and not _java_home():
        print("spark-check: no java on PATH (and no JAVA_HOME): Spark needs Java 17 or newer", file=sys.stderr)
        return 2
    import duckdb

    fd = _fleet_doc()
    doc = fd.DOC.read_text(encoding="utf-8")
    duck = numbered(fd.recipes(doc))
    spark_sql = spark_recipes(doc, fd)
    if not spark_sql or not set(spark_sql) <= set(duck):
        print(f"spark-check: docs/fleet.md: Spark recipes {sorted(spark_sql)}, DuckDB recipes {sorted(duck)}")
        return 1

    print(
        f"python {platform.python_version()}, pyspark {pyspark.__version__}, duckdb {duckdb.__version__}, "
        f"{java_version()}"
    )
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ract-spark-check-"))
    work.mkdir(parents=True, exist_ok=True)
    failures = 0
    spark = None
    try:
        runs = work / "runs"
        if runs.exists():
            shutil.rmtree(runs)
        fd.copy_fixtures(work)
        export = subprocess.run(
            [*RACT, "trace", "export", "--format", "parquet", "--overwrite", "-q", "--output", "out", "runs"],
            cwd=work,
            check=False,
        )
        print(f"ract trace export --format parquet --output out runs: exit {export.returncode}")
        if export.returncode == 2 or not (work / "out" / "events").is_dir():
            print("spark-check: the export failed", file=sys.stderr)
            return 1

        start = time.perf_counter()
        try:
            spark = (
                SparkSession.builder.master("local[1]")
                .appName("ract-spark-check")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.sql.shuffle.partitions", "1")
                .getOrCreate()
            )
        except Exception as exc:  # Java missing or too old: pyspark raises its own error types
            print(f"spark-check: Spark did not start: {exc}", file=sys.stderr)
            return 2
        spark.sparkContext.setLogLevel("ERROR")
        print(f"Spark {spark.version} started in local mode in {time.perf_counter() - start:.1f} s")

        for table in fd.TABLES:
            df = spark.read.parquet(str(work / "out" / table.name))
            df.createOrReplaceTempView(table.name)
            got = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
            want = [(c.name, fd.SPARK_TYPES[c.type]) for c in table.columns]
            n_spark = df.count()
            (row,), _ = ract_rows(f"SELECT count(*) AS n FROM {table.name}", work, "runs")
            ok = got == want and n_spark == row["n"]
            failures += not ok
            print(
                f"{'ok  ' if ok else 'DIFF'} table {table.name}: {len(got)} columns"
                f"{'' if got == want else f' {got} != {want}'}, {n_spark} rows in Spark, {row['n']} in ract trace sql"
            )

        for number, (title, sql) in sorted(spark_sql.items()):
            spark_rows = [plain(r.asDict(recursive=True)) for r in spark.sql(sql).collect()]
            duck_rows, code = ract_rows(duck[number].sql, work, "runs")
            ok = same(spark_rows, duck_rows)
            failures += not ok
            print(f"{'ok  ' if ok else 'DIFF'} recipe {number} ({title}): {len(spark_rows)} row(s) both ways")
            for r in spark_rows:
                print(f"       spark: {json.dumps(r, ensure_ascii=False)}")
            if not ok:
                for r in duck_rows:
                    print(f"       ract:  {json.dumps(r, ensure_ascii=False)}")
            print(f"       ract trace sql over the logs: exit {code}")
    finally:
        if spark is not None:
            spark.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("spark-check: every answer equal" if not failures else f"spark-check: {failures} difference(s)")
    return 1 if failures else 0


def _java_home() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(home) and Path(home, "bin", "java").exists()


if __name__ == "__main__":
    raise SystemExit(main())
