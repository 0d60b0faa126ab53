"""The .om container: GE's header, 64-bit partition tables, partitions; reader, writer, JSON dump, info."""
from .container import OmFile, OmModel, read_om, write_om
from .header import ModelFileHeader

__all__ = ["OmFile", "OmModel", "read_om", "write_om", "ModelFileHeader"]
