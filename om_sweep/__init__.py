"""om-sweep: sweep models across SoCs and atc-py options on one machine or a Dask cluster.

Drives atc-py (atc_py) and om-run (runner) through their Python APIs: spec (the sweep file) -> plan
(points, job keys) -> engines (local process pool, Dask) running sandboxed jobs -> store (one record
per job, resume) -> table (Parquet + CSV) -> report (HTML).
"""
