"""Fetch source packages through their registries' own clients, cache them, extract them.

Nothing is installed system-wide: ``apt-get download`` + ``dpkg-deb -x`` for Debian packages,
``pip download --no-deps`` for PyPI, ``npm pack`` for npm. The cache (``$THOUGHTVEC_CACHE`` or
``~/.cache/thoughtvec/sources``) holds ``<kind>/<archive>`` and the extracted ``<archive>.d/``;
a package already there is used as is, so a second build never touches the network.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

FETCH_TIMEOUT_S = 600


class FetchError(RuntimeError):
    """A package could not be downloaded or extracted."""


@dataclass(frozen=True)
class Package:
    """A registry package. ``version`` pins PyPI/npm; Debian takes the archive's current version.

    ``members``: path prefixes to extract from a wheel or tarball (all of it when empty).
    """

    kind: str  # "debian", "pypi-sdist", "pypi-wheel" or "npm"
    name: str
    version: str | None = None
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fetched:
    package: Package
    version: str
    archive: Path
    root: Path  # the extracted files


def default_cache() -> Path:
    env = os.environ.get("THOUGHTVEC_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "thoughtvec" / "sources"


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _archive_name_version(kind: str, filename: str) -> tuple[str, str] | None:
    """(name, version) encoded in an archive's file name, or None if it is not one of ``kind``."""
    if kind == "debian" and filename.endswith(".deb"):
        name, version, _arch = filename[:-4].split("_", 2)
        return name, unquote(version)  # the epoch colon is saved as %3a
    if kind == "pypi-wheel" and filename.endswith(".whl"):
        name, version = filename.split("-")[:2]
        return _canon(name), version
    if kind in ("pypi-sdist", "npm") and filename.endswith((".tar.gz", ".tgz", ".zip")):
        stem = re.sub(r"\.(tar\.gz|tgz|zip)$", "", filename)
        name, _, version = stem.rpartition("-")
        return _canon(name), version
    return None


def _cached(folder: Path, pkg: Package) -> Path | None:
    want = pkg.name if pkg.kind == "debian" else _canon(pkg.name)
    hits = []
    for f in sorted(folder.glob("*")) if folder.is_dir() else []:
        nv = _archive_name_version(pkg.kind, f.name)
        if nv and nv[0] == want and (pkg.version is None or nv[1] == pkg.version):
            hits.append(f)
    return hits[-1] if hits else None


def _run(cmd: list[str], cwd: Path) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except FileNotFoundError:
        raise FetchError(f"`{cmd[0]}` is not installed; it is needed to fetch this source") from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"`{' '.join(cmd)}` took longer than {FETCH_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise FetchError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {' | '.join(tail)}")


def _download_command(pkg: Package, dest: Path) -> list[str]:
    if pkg.kind == "debian":
        return ["apt-get", "download", pkg.name]
    if pkg.kind == "npm":
        return ["npm", "pack", "--silent", f"{pkg.name}@{pkg.version}"]
    fmt = ["--no-binary", ":all:"] if pkg.kind == "pypi-sdist" else ["--only-binary", ":all:"]
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--quiet",
        *fmt,
        "-d",
        str(dest),
        f"{pkg.name}=={pkg.version}",
    ]


def _download(pkg: Package, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        _run(_download_command(pkg, Path(tmp)), cwd=Path(tmp))
        files = [f for f in Path(tmp).iterdir() if _archive_name_version(pkg.kind, f.name)]
        if len(files) != 1:
            raise FetchError(f"downloading {pkg.name} left {len(files)} archives, expected one")
        target = folder / files[0].name
        os.replace(files[0], target)  # same file system: the archive appears whole or not at all
    return target


def _wanted(name: str, members: tuple[str, ...]) -> bool:
    return not members or any(name.startswith(m) for m in members)


def _extract(archive: Path, dest: Path, members: tuple[str, ...]) -> None:
    if archive.suffix == ".deb":
        _run(["dpkg-deb", "-x", str(archive), str(dest)], cwd=dest)
    elif archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(dest, [n for n in z.namelist() if _wanted(n, members)])
    else:
        with tarfile.open(archive) as t:
            chosen = [m for m in t.getmembers() if _wanted(m.name, members)]
            if hasattr(tarfile, "data_filter"):
                t.extractall(dest, chosen, filter="data")  # no absolute paths, links out, devices
                return
            for m in chosen:  # Python < 3.11.4 has no filters: refuse what could escape dest
                if m.name.startswith("/") or ".." in Path(m.name).parts or m.issym() or m.islnk():
                    raise FetchError(f"{archive}: unsafe member {m.name!r}")
            t.extractall(dest, chosen)


def fetch(pkg: Package, cache: Path) -> Fetched:
    """The package's extracted files, downloading and extracting only what the cache lacks."""
    folder = cache / pkg.kind
    archive = _cached(folder, pkg) or _download(pkg, folder)
    root = archive.with_name(archive.name + ".d")
    if not root.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".{archive.name}."))
        try:
            _extract(archive, tmp, pkg.members)
            os.replace(tmp, root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    nv = _archive_name_version(pkg.kind, archive.name)
    return Fetched(pkg, nv[1] if nv else (pkg.version or "?"), archive, root)
