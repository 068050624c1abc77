"""A GGUF file checked whole before llama.cpp loads it: header, metadata, tensor table, data.

llama.cpp refuses a truncated or damaged GGUF with "Failed to init server, please check the
input params", which names neither the file nor what is wrong with it. This reads the file's
own description of itself (the layout of llama.cpp's `gguf.cpp`: magic, version, tensor and
metadata counts, the metadata key/value pairs, one record per tensor, then the aligned
tensor data) and checks that every part is there, so a partial download is one line naming
the file. Only the structure is read (a few hundred kilobytes at most), never the weights.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from clineval.errors import InputError

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Metadata value types (gguf.cpp's GGUF_TYPE_*) of a fixed size, by type id: bytes.
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
# Tensor types (ggml_type) whose size is certain: id -> (values per block, bytes per block).
# A tensor of another type is still checked to start inside the file.
_TENSOR_TYPES = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    30: (1, 2),  # BF16
}
# Bounds no real file reaches: a damaged count must not make this read for ever.
_MAX_COUNT = 2**32
_MAX_DIMS = 8  # GGML_MAX_DIMS is 4


class _Truncated(Exception):
    pass


class _Reader:
    """Reads forward, keeping its own position (a file's tell() per value took seconds over a
    vocabulary's 50,000 strings)."""

    def __init__(self, fh: BinaryIO, size: int):
        self.fh, self.size, self.pos = fh, size, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated
        self.pos += n
        return self.fh.read(n)

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated
        self.pos += n
        self.fh.seek(n, 1)

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack(self.take(8))[0])

    def string(self) -> bytes:
        return self.take(self.u64())

    def skip_strings(self, count: int) -> None:
        read, unpack, size = self.fh.read, _U64.unpack, self.size
        pos = self.pos
        for _ in range(count):  # the hot loop of a vocabulary: reads, no seeks
            if pos + 8 > size:
                raise _Truncated
            n = unpack(read(8))[0]
            pos += 8 + n
            if pos > size:
                raise _Truncated
            read(n)
        self.pos = pos


_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")


def _value(reader: _Reader, kind: int, path: Path) -> int | None:
    """Read (skip) one metadata value; its integer when it is one (the alignment)."""
    if kind in _FIXED:
        raw = reader.take(_FIXED[kind])
        return int.from_bytes(raw, "little") if kind in (4, 5, 10, 11) else None
    if kind == _STRING:
        reader.string()
        return None
    if kind == _ARRAY:
        item, count = reader.u32(), reader.u64()
        if count > _MAX_COUNT:
            raise InputError(f"damaged GGUF file: an array of {count:,} values", path=path)
        if item in _FIXED:
            reader.skip(_FIXED[item] * count)
        elif item == _STRING:
            reader.skip_strings(count)
        else:
            for _ in range(count):
                _value(reader, item, path)
        return None
    raise InputError(f"damaged GGUF file: unknown metadata type {kind}", path=path)


def check_gguf_layout(path: Path) -> None:
    """InputError naming `path` unless its header, metadata, tensor table and tensor data are
    all inside the file (see the module doc)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        reader = _Reader(fh, size)
        try:
            if reader.take(4) != MAGIC:
                raise InputError("not a GGUF file (bad magic bytes)", path=path)
            version = reader.u32()
            if version not in (2, 3):
                raise InputError(f"GGUF version {version} is not one llama.cpp reads", path=path)
            tensors, entries = reader.u64(), reader.u64()
            if tensors > _MAX_COUNT or entries > _MAX_COUNT:
                raise InputError("damaged GGUF file: impossible counts in its header", path=path)
            alignment = DEFAULT_ALIGNMENT
            for _ in range(entries):
                key = reader.string()
                number = _value(reader, reader.u32(), path)
                if key == b"general.alignment" and number:
                    alignment = number
            end = 0  # the end of the tensor data, relative to its start
            for _ in range(tensors):
                reader.string()
                dims = reader.u32()
                if dims > _MAX_DIMS:
                    raise InputError(f"damaged GGUF file: a tensor of {dims} dimensions", path=path)
                count = 1
                for _ in range(dims):
                    count *= reader.u64()
                kind, offset = reader.u32(), reader.u64()
                if kind in _TENSOR_TYPES:
                    block, block_bytes = _TENSOR_TYPES[kind]
                    need = offset + count // block * block_bytes
                else:  # a size not known here: the tensor at least starts inside the file
                    need = offset + 1
                end = max(end, need)
        except _Truncated:
            raise InputError(
                f"truncated GGUF file: it ends after {size:,} bytes, inside its header (a partial "
                "download?)",
                path=path,
            ) from None
        data_start = -(-reader.pos // alignment) * alignment
    if data_start + end > size:
        raise InputError(
            f"truncated GGUF file: {size:,} bytes, its tensors need {data_start + end:,} "
            "(a partial download?)",
            path=path,
        )
