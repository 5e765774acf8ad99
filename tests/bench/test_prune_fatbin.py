"""docker/gpu/prune_fatbin.py on a small ELF file built here: the cubins and PTX of other GPU generations become
zeros in modules that hold the kept generation's cubin, and nothing else changes (sizes, headers, modules without it)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docker" / "gpu"))
from prune_fatbin import KIND_ELF, KIND_PTX, main


def entry(kind: int, sm: int, fill: int, size: int = 48) -> bytes:
    head = bytearray(64)
    struct.pack_into("<HHIQ", head, 0, kind, 0x101, 64, size)
    struct.pack_into("<I", head, 28, sm)
    return bytes(head) + bytes([fill]) * size


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf(sections: dict[bytes, bytes]) -> bytes:
    """An ELF64 file with these sections (and its section-name table), nothing else."""
    names = b"\0" + b"".join(n + b"\0" for n in sections) + b".shstrtab\0"
    data, offsets = bytearray(64), []
    for body in [*sections.values(), names]:
        offsets.append(len(data))
        data += body + bytes(-len(body) % 8)
    shoff = len(data)
    headers = [bytes(64)]
    name_at = 1
    for (name, body), off in zip([*sections.items(), (b".shstrtab", names)], offsets):
        h = bytearray(64)
        struct.pack_into("<II", h, 0, name_at, 1)
        struct.pack_into("<QQ", h, 0x18, off, len(body))
        headers.append(bytes(h))
        name_at += len(name) + 1
    data += b"".join(headers)
    data[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<Q", data, 0x28, shoff)
    struct.pack_into("<HHH", data, 0x3A, 64, len(headers), len(headers) - 1)
    return bytes(data)


def test_other_generations_are_zeroed_only_where_the_kept_one_is_there(tmp_path, capsys):
    pruned = container(entry(KIND_ELF, 80, 0x11), entry(KIND_ELF, 90, 0x22), entry(KIND_ELF, 120, 0x33))
    without = container(entry(KIND_ELF, 80, 0x44))  # no sm_90 cubin: the GPU would have nothing, so left whole
    with_ptx = container(entry(KIND_PTX, 80, 0x55), entry(KIND_ELF, 90, 0x66), entry(KIND_ELF, 86, 0x77))
    fatbin = pruned + bytes(8) + without + with_ptx  # containers may be padded apart
    lib = tmp_path / "lib.so"
    lib.write_bytes(elf({b".text": b"\x90" * 40, b".nv_fatbin": fatbin}))
    before = lib.read_bytes()

    assert main([str(lib), "--keep-sm", "90"]) == 0
    after = lib.read_bytes()
    assert len(after) == len(before)
    start = before.index(fatbin)
    got = after[start : start + len(fatbin)]
    assert got[: len(pruned)] == container(entry(KIND_ELF, 80, 0), entry(KIND_ELF, 90, 0x22), entry(KIND_ELF, 120, 0))
    assert got[len(pruned) : -len(with_ptx)] == fatbin[len(pruned) : -len(with_ptx)]
    # the GPU loads its own cubin where there is one, so PTX beside it is never compiled there
    assert got[-len(with_ptx) :] == container(entry(KIND_PTX, 80, 0), entry(KIND_ELF, 90, 0x66), entry(KIND_ELF, 86, 0))
    assert after[:start] == before[:start] and after[start + len(fatbin) :] == before[start + len(fatbin) :]
    out = capsys.readouterr().out
    assert "sm_80:" in out and "sm_90:" in out and "ptx_80:" in out


def test_list_only_prints_the_generations(tmp_path, capsys):
    lib = tmp_path / "lib.so"
    lib.write_bytes(elf({b".nv_fatbin": container(entry(KIND_ELF, 70, 0x11), entry(KIND_ELF, 80, 0x22))}))
    before = lib.read_bytes()
    assert main([str(lib), "--list"]) == 0
    assert lib.read_bytes() == before
    out = capsys.readouterr().out
    assert "sm_70:" in out and "sm_80:" in out and "sm_90" not in out and "zeroed" not in out


def test_a_library_without_cubins_is_refused(tmp_path, capsys):
    lib = tmp_path / "plain.so"
    lib.write_bytes(elf({b".text": b"\x90" * 16}))
    assert main([str(lib)]) == 1
    assert "no .nv_fatbin section" in capsys.readouterr().err
    (tmp_path / "not-elf").write_bytes(b"hello")
    with pytest.raises(ValueError, match="not a 64-bit ELF"):
        main([str(tmp_path / "not-elf")])
