"""atc-py's version number, in a leaf module: the compiler stamps it into every .om (pipeline, static_model)
without importing the package `__init__`, whose `build` imports the pipeline (that was an import cycle)."""
__version__ = "0.1.0"
