"""ModelFileHeader: 256 bytes, little-endian, natural C alignment (GE framework_types_internal.h)."""
from __future__ import annotations

import struct
from dataclasses import dataclass

MODEL_FILE_MAGIC_NUM = 0x444F4D49
MODEL_FILE_HEAD_LEN = 256
MODEL_VERSION = 0x20000000
OM_PROTO_VERSION = 2
PLATFORM_VERSION = b"1.11.z.0"

# magic headsize version checksum[64] length is_encrypt is_checksum modeltype genmode name[32] ops
# userdefineinfo[32] om_ir_version model_num platform_version[20] platform_type padd[3] model_length
# need_check_os_cpu_info is_unknow_model reserved[62]
_FMT = struct.Struct("<III64sIBBBB32sI32sII20sB3sQBB62s")
assert _FMT.size == MODEL_FILE_HEAD_LEN


@dataclass
class ModelFileHeader:
    magic: int = MODEL_FILE_MAGIC_NUM
    headsize: int = MODEL_FILE_HEAD_LEN
    version: int = MODEL_VERSION
    checksum: bytes = b"\0" * 64
    length: int = 0
    is_encrypt: int = 0
    is_checksum: int = 0
    modeltype: int = 0
    genmode: int = 0
    name: bytes = b""
    ops: int = 0
    userdefineinfo: bytes = b""
    om_ir_version: int = OM_PROTO_VERSION
    model_num: int = 1
    platform_version: bytes = PLATFORM_VERSION
    platform_type: int = 0
    model_length: int = 0
    need_check_os_cpu_info: int = 0
    is_unknow_model: int = 0

    def pack(self) -> bytes:
        name = self.name[:31]
        return _FMT.pack(self.magic, self.headsize, self.version, self.checksum, self.length, self.is_encrypt,
                         self.is_checksum, self.modeltype, self.genmode, name, self.ops, self.userdefineinfo,
                         self.om_ir_version, self.model_num, self.platform_version, self.platform_type, b"\0" * 3,
                         self.model_length, self.need_check_os_cpu_info, self.is_unknow_model, b"\0" * 62)

    @classmethod
    def unpack(cls, data: bytes) -> "ModelFileHeader":
        f = _FMT.unpack_from(data)
        return cls(magic=f[0], headsize=f[1], version=f[2], checksum=f[3], length=f[4], is_encrypt=f[5],
                   is_checksum=f[6], modeltype=f[7], genmode=f[8], name=f[9].rstrip(b"\0"), ops=f[10],
                   userdefineinfo=f[11], om_ir_version=f[12], model_num=f[13],
                   platform_version=f[14].rstrip(b"\0"), platform_type=f[15], model_length=f[17],
                   need_check_os_cpu_info=f[18], is_unknow_model=f[19])

    @property
    def model_name(self) -> str:
        return self.name.decode("utf-8", "replace")
