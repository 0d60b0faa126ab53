"""Device memory: the feature-map arena and the weight arena, addressed by the logical addresses of the om."""
from __future__ import annotations

import numpy as np

from atc_py.ir.graph import TensorDesc


class MemoryFault(Exception):
    pass


def load_weights(weights: bytes) -> np.ndarray:
    """The weights copied into (simulated) device memory once, at model load."""
    return np.frombuffer(bytearray(weights), dtype=np.uint8)


class DeviceMemory:
    def __init__(self, fm_base: int, fm_size: int, weight_base: int, weights):
        """weights: the model's bytes (copied), or a uint8 array already loaded (shared: the weights stay in
        device memory from one execution to the next, as after a model load)."""
        if not isinstance(weights, np.ndarray):
            weights = load_weights(weights)
        self.regions = [
            ("feature map", fm_base, np.zeros(fm_size, dtype=np.uint8)),
            ("weights", weight_base, weights),
        ]

    def _locate(self, address: int, nbytes: int) -> tuple[np.ndarray, int]:
        for name, base, buf in self.regions:
            if base <= address < base + len(buf) or (nbytes == 0 and address == base):
                off = address - base
                if off + nbytes > len(buf):
                    raise MemoryFault(f"{nbytes} bytes at 0x{address:X} run past the end of the {name} "
                                      f"({len(buf)} B)")
                return buf, off
        raise MemoryFault(f"address 0x{address:X} is outside device memory")

    def read(self, address: int, desc: TensorDesc) -> np.ndarray:
        """A copy: what the host gets back (D2H)."""
        return self.view(address, desc).copy()

    def view(self, address: int, desc: TensorDesc) -> np.ndarray:
        """A read-only view: what a kernel reads when it starts. Kernels compute at once and their outputs are
        copied in at the end (see holds), so the view is never read after memory changes under it."""
        buf, off = self._locate(address, desc.nbytes)
        v = buf[off:off + desc.nbytes].view(desc.dtype).reshape(desc.shape)
        v.flags.writeable = False
        return v

    def holds(self, array: np.ndarray) -> bool:
        """Whether an array may be (a view of) device memory: a kernel that returns its input as its output."""
        return any(np.may_share_memory(array, buf) for _, _, buf in self.regions)

    def write(self, address: int, array: np.ndarray) -> None:
        raw = np.asarray(array, order="C").reshape(-1).view(np.uint8)
        buf, off = self._locate(address, raw.size)
        buf[off:off + raw.size] = raw
