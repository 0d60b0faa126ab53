"""The results table: one row per point, fixed typed columns, sorted by a stable key; written as Parquet
(pyarrow) and CSV atomically (never through a symlink planted in the output folder), and read back (for the report) with its columns checked.
"""
from __future__ import annotations

import io
import pathlib

from atc_py.common.atomic_write import write_in_folder
from atc_py.common.errors import AtcError

from .job import GENERATION_FIELDS, RESULT_FIELDS, SERVE_FIELDS
from .plan import Plan, Point

IDENTITY_COLUMNS = ("model", "options", "numeric")     # a point; with the grid columns between model and options
TRAILING_COLUMNS = ("key", "tool_version")
LATER_COLUMNS = (*GENERATION_FIELDS, *SERVE_FIELDS)    # tables written before these columns existed read them empty
BUILD, SERVE = "build", "serve"       # the `kind` column (after `numeric`): absent from older tables, all builds
REQUIRED_COLUMNS = IDENTITY_COLUMNS + tuple(f for f in RESULT_FIELDS if f not in LATER_COLUMNS) + TRAILING_COLUMNS


def pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.csv  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise AtcError("E40008", package="pyarrow") from None
    return pa


def column_names(grid_keys: list[str]) -> list[str]:
    return ["model", *grid_keys, "options", "numeric", "kind", *RESULT_FIELDS, *TRAILING_COLUMNS]


def _schema(grid_keys: list[str]):
    pa = pyarrow()
    kinds = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    fields = [pa.field("model", pa.string(), nullable=False)]
    fields += [pa.field(k, pa.string()) for k in grid_keys]
    fields += [pa.field("options", pa.string()), pa.field("numeric", pa.bool_()), pa.field("kind", pa.string())]
    fields += [pa.field(name, kinds[kind]) for name, kind in RESULT_FIELDS.items()]
    fields += [pa.field("key", pa.string()), pa.field("tool_version", pa.string())]
    return pa.schema(fields, metadata={b"om_sweep.grid_keys": ",".join(grid_keys).encode()})


def row(point: Point, grid_keys: list[str], record: dict | None, tool_version: str) -> dict:
    values = dict(point.grid)
    out = {"model": point.model, **{k: values.get(k) for k in grid_keys}, "options": point.options,
           "numeric": point.numeric, "kind": point.kind}
    rec = {name: None for name in RESULT_FIELDS}
    if record is not None:
        rec.update({k: record[k] for k in RESULT_FIELDS})
    elif point.failure is not None:
        rec.update(status=point.failure.code, error_message=point.failure.message, attempts=0)
    out.update(rec)
    out["key"] = point.job.key if point.job else None
    out["tool_version"] = tool_version
    return out


def build_rows(plan: Plan, records: dict[str, dict], tool_version: str) -> list[dict]:
    return [row(p, plan.grid_keys, records.get(p.job.key) if p.job else None, tool_version) for p in plan.points]


def to_arrow(rows: list[dict], grid_keys: list[str]):
    pa = pyarrow()
    schema = _schema(grid_keys)
    return pa.Table.from_pylist(rows, schema=schema)


def write_results(out_dir: pathlib.Path, rows: list[dict], grid_keys: list[str]) -> list[pathlib.Path]:
    pa = pyarrow()
    table = to_arrow(rows, grid_keys)
    paths = []
    for name, writer in (("results.parquet", lambda t, f: pa.parquet.write_table(t, f)),
                         ("results.csv", lambda t, f: pa.csv.write_csv(t, f))):
        buf = io.BytesIO()
        writer(table, buf)
        path = pathlib.Path(out_dir) / name
        try:
            write_in_folder(path, buf.getvalue())     # a symlink planted at results.csv is replaced
        except OSError as exc:
            raise AtcError("E40010", path=str(path), reason=exc.strerror or str(exc)) from None
        paths.append(path)
    return paths


def read_results(path) -> tuple[list[dict], list[str]]:
    """(rows, grid keys) of a results.parquet; refuses a file that is not one."""
    pa = pyarrow()
    path = pathlib.Path(path)
    try:
        table = pa.parquet.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise AtcError("E40009", path=str(path), reason=str(exc).splitlines()[0] if str(exc) else type(exc).__name__) \
            from None
    names = table.column_names
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise AtcError("E40009", path=str(path), reason=f"not an om-sweep results table (no column {missing[0]!r})")
    meta = (table.schema.metadata or {}).get(b"om_sweep.grid_keys", b"").decode()
    grid_keys = [k for k in meta.split(",") if k] if meta else \
        [c for c in names[names.index("model") + 1:names.index("options")]]
    if any(k not in names for k in grid_keys):
        raise AtcError("E40009", path=str(path), reason="its grid columns do not match its metadata")
    rows = table.to_pylist()
    for r in rows:
        r.setdefault("kind", BUILD)
        for c in LATER_COLUMNS:
            r.setdefault(c, None)
    return rows, grid_keys
