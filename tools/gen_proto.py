"""Regenerate atc_py/proto/*_pb2.py from proto/*.proto (needs the test extra: grpcio-tools)."""
import pathlib
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    out = ROOT / "atc_py" / "proto"
    for proto in sorted((ROOT / "proto").glob("*.proto")):
        rc = protoc.main(["protoc", f"-I{ROOT / 'proto'}", f"--python_out={out}", str(proto)])
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
