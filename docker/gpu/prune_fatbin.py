"""Zero the CUDA machine code a GPU will never load, so a shared library compresses to what one GPU needs.

    python docker/gpu/prune_fatbin.py libonnxruntime_providers_cuda.so --keep-sm 90
    python docker/gpu/prune_fatbin.py libfaiss.so --list      # which GPU generations it has code for; changes nothing

A CUDA library's ``.nv_fatbin`` section holds, for each kernel module, one compiled ELF (a cubin) per
GPU generation it was built for (sm_75 … sm_120), and the driver loads only the one that matches the
GPU; PTX, where a module has it, is compiled by the driver only for a GPU with no matching cubin. This
rewrites the file in place with every entry of another generation, cubin or PTX, filled with zeros in
each module that has a cubin for the kept generation: the file keeps its size, layout and headers
(nothing moves, so no offset or symbol breaks), and the zeros compress to nothing. A module with no
cubin for the kept generation is left whole, PTX and all, so nothing the GPU could use is lost.

Prints what it found and kept; exits 1 when the file has no ``.nv_fatbin`` section.
"""

from __future__ import annotations

import argparse
import collections
import struct
import sys
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, padded payload size; the generation is the u32 at +28


def section(data: bytes | bytearray, name: bytes) -> tuple[int, int] | None:
    """File offset and size of an ELF64 section by name, or None."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab_off = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        base = shoff + i * shentsize
        (name_off,) = struct.unpack_from("<I", data, base)
        end = data.index(b"\0", strtab_off + name_off)
        if bytes(data[strtab_off + name_off : end]) == name:
            off, size = struct.unpack_from("<QQ", data, base + 0x18)
            return off, size
    return None


def name(kind: int, sm: int) -> str:
    return f"{'ptx' if kind == KIND_PTX else 'sm'}_{sm}"


def prune(data: bytearray, start: int, size: int, keep_sm: int) -> dict[str, collections.Counter]:
    """Zero, inside ``data[start:start+size]``, every other entry of the modules that have a ``keep_sm`` cubin."""
    seen: collections.Counter = collections.Counter()
    zeroed: collections.Counter = collections.Counter()
    pos, end = start, start + size
    while pos + CONTAINER.size <= end:
        magic, _, header, body = CONTAINER.unpack_from(data, pos)
        if magic != FATBIN_MAGIC:  # alignment padding between containers
            pos += 8
            continue
        entries = []
        e, stop = pos + header, pos + header + body
        while e < stop:
            kind, _, ehead, padded = ENTRY.unpack_from(data, e)
            (sm,) = struct.unpack_from("<I", data, e + 28)
            entries.append((kind, sm, e + ehead, padded))
            seen[name(kind, sm)] += padded
            e += ehead + padded
        if any(kind == KIND_ELF and sm == keep_sm for kind, sm, _, _ in entries):
            for kind, sm, payload, padded in entries:
                if (kind, sm) != (KIND_ELF, keep_sm):
                    data[payload : payload + padded] = bytes(padded)
                    zeroed[name(kind, sm)] += padded
        pos = stop
    return {"seen": seen, "zeroed": zeroed}


def prune_file(path: Path, keep_sm: int = 90, write: bool = True) -> dict[str, collections.Counter] | None:
    """:func:`prune` on a library file, rewritten in place (unless not ``write``); None where it has no ``.nv_fatbin``."""
    data = bytearray(path.read_bytes())
    where = section(data, b".nv_fatbin")
    if where is None:
        return None
    got = prune(data, *where, keep_sm)
    if write:
        path.write_bytes(data)
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("library", type=Path)
    p.add_argument("--keep-sm", type=int, default=90, help="the GPU generation to keep (90: H100/H200)")
    p.add_argument("--list", action="store_true", help="only print which generations the library has code for")
    args = p.parse_args(argv)
    got = prune_file(args.library, args.keep_sm, write=not args.list)
    if got is None:
        print(f"{args.library}: no .nv_fatbin section", file=sys.stderr)
        return 1
    for key in sorted(got["seen"], key=lambda k: int(k.split("_")[1])):
        print(f"{key:>8}: {got['seen'][key] / 1e6:7.1f} MB" + ("" if args.list else f", zeroed {got['zeroed'][key] / 1e6:7.1f} MB"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
