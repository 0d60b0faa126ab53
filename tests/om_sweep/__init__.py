"""om-sweep: sweep files, the local and Dask engines, reports, generation points, hostile sweeps."""
