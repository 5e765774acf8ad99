"""One writer per index folder: a second writer is refused at its start, naming the folder as configured and what to
do; read-only stores share a folder, never with a writer; the lock goes with the store's close or its process's end
(``kill -9`` leaves none behind), in this process and across real ones, ``thoughtvec serve`` and ``thoughtvec index``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.service.conftest import REPO, serve_process
from thoughtvec.bench.bench import free_port
from thoughtvec.service.errors import IndexesReadOnly, IndexFolderLocked
from thoughtvec.service.index.backend import check_index_folder, open_backend
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.folder_lock import LOCK_FILE
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.store import IndexStore
from thoughtvec.service.settings import Settings

READ_ONLY = "read-only here"
ENV = os.environ | {"PYTHONPATH": str(REPO)}

# A second process that takes the folder given as its argument, says so, and holds it until killed.
HOLD = (
    "import sys, time; from pathlib import Path; from thoughtvec.service.index.store import IndexStore\n"
    "store = IndexStore(Path(sys.argv[1]), read_only=sys.argv[2] or None); store.open(); print('held', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """The test's folder as the working directory: index folders named relative to it, as an operator names one."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def hold(folder: Path, read_only: str = "") -> subprocess.Popen:
    """Another process holding ``folder`` (read-only where ``read_only`` says why), once it says so."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), read_only], env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_folder_as_configured_and_what_to_do(here):
    first = IndexStore(Path("idx"))
    first.create(new_config(NewIndex("x", "tiny", "mean", 4)))  # its first write takes the folder
    second = IndexStore(Path("idx"))
    with pytest.raises(IndexFolderLocked) as e:
        second.load_all()
    message = str(e.value)
    assert "the index folder idx (index_dir) is in use" in message and str(here) not in message
    assert "Stop that process first" in message and "--index-read-only" in message and "Milvus" in message
    with pytest.raises(IndexFolderLocked):
        second.create(new_config(NewIndex("y", "tiny", "mean", 4)))
    assert not (here / "idx" / "y").exists() and second.names() == []
    first.close()
    second.load_all()  # close let go of it
    assert second.names() == ["x"] and (here / "idx" / LOCK_FILE).is_file()
    second.close()


def test_read_only_stores_share_a_folder_and_never_with_a_writer(tmp_path):
    writer = IndexStore(tmp_path)
    writer.create(new_config(NewIndex("x", "tiny", "mean", 4)))
    writer.add("x", [Doc("a", "first")], np.eye(1, 4, dtype=np.float32))
    with pytest.raises(IndexFolderLocked, match="being written by another store of this process: a read-only server beside it"):
        IndexStore(tmp_path, read_only=READ_ONLY).open()
    writer.close()

    readers = [IndexStore(tmp_path, read_only=READ_ONLY) for _ in range(3)]
    for reader in readers:
        assert reader.load_all() == ["x"] and reader.count("x") == 1
    with pytest.raises(IndexFolderLocked, match="in use by read-only servers.*start this one read-only too"):
        IndexStore(tmp_path).load_all()
    with pytest.raises(IndexesReadOnly, match=READ_ONLY):
        readers[0].add("x", [Doc("b", "second")], np.ones((1, 4), np.float32))
    for reader in readers:
        reader.close()
    again = IndexStore(tmp_path)
    again.load_all()  # the last reader gone: a writer may start
    again.close()


def test_listing_takes_nothing_and_runs_beside_a_writer(tmp_path):
    writer = IndexStore(tmp_path)
    writer.create(new_config(NewIndex("x", "tiny", "mean", 4)))
    assert [s.name for s in IndexStore(tmp_path).inventory()] == ["x"]  # `thoughtvec index list` beside a server
    writer.close()


def test_a_read_only_server_is_asked_for_and_builds_nothing(tmp_path):
    settings = Settings(index_dir=tmp_path, index_read_only=True)
    store = open_backend(settings)
    assert store.capabilities.read_only and "index_read_only" in store.capabilities.read_only
    assert str(tmp_path) not in store.capabilities.read_only  # the 409 a write gets names no path
    store.open()
    beside = open_backend(settings)
    beside.open()  # another read-only server beside it
    with pytest.raises(IndexFolderLocked):
        open_backend(settings.model_copy(update={"index_read_only": False})).open()
    store.close()
    beside.close()
    with pytest.raises(ValueError, match="index_read_only is for a FAISS index folder"):
        Settings(index_read_only=True, index_backend="milvus")


def test_workers_are_refused_before_they_start_where_the_folder_is_taken(tmp_path):
    """``--workers N``: the default-index build before them writes the folder; with no build, they only read it."""
    reader = IndexStore(tmp_path, read_only=READ_ONLY)
    reader.open()
    workers = Settings(index_dir=tmp_path, workers=2, build_default_index=False)
    check_index_folder(workers)  # readers beside readers
    with pytest.raises(IndexFolderLocked, match="in use by read-only servers"):
        check_index_folder(workers.model_copy(update={"build_default_index": True}))
    reader.close()
    writer = IndexStore(tmp_path)
    writer.open()
    with pytest.raises(IndexFolderLocked, match="being written by"):
        check_index_folder(workers)
    writer.close()
    check_index_folder(workers.model_copy(update={"build_default_index": True}))  # nobody: and it let go at once
    after = IndexStore(tmp_path)
    after.open()
    after.close()


def test_another_process_is_refused_and_a_killed_holder_leaves_no_lock(tmp_path):
    mine = IndexStore(tmp_path)
    mine.open()
    refused = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path), ""], env=ENV, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "held" not in refused.stdout
    assert f"the index folder {tmp_path} (index_dir) is in use: another process (pid {os.getpid()}) writes it" in refused.stderr
    mine.close()

    holder = hold(tmp_path)
    with pytest.raises(IndexFolderLocked, match=f"another process \\(pid {holder.pid}\\) writes it"):
        IndexStore(tmp_path).open()
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    after = IndexStore(tmp_path)
    after.open()  # at once: the kernel dropped the dead process's lock
    after.close()

    readers = [hold(tmp_path, READ_ONLY) for _ in range(2)]  # read-only processes share it
    with pytest.raises(IndexFolderLocked, match="in use by read-only servers"):
        IndexStore(tmp_path).open()
    for r in readers:
        r.send_signal(signal.SIGKILL)
        r.wait(30)
    after.open()
    after.close()


def test_index_build_on_a_folder_in_use_stops_with_the_message(models_dir, here):
    held = IndexStore(Path("idx"))
    held.open()
    (here / "docs.txt").write_text("a cat sat\na dog ran\n", encoding="utf-8")
    build = [sys.executable, "-m", "thoughtvec.service.cli", "index", "build", "--model", "tiny", "--models-dir", str(models_dir),
             "--input", "docs.txt", "--name", "notes", "--index-dir", "idx"]  # fmt: skip
    done = subprocess.run(build, cwd=here, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "thoughtvec index build: the index folder idx (index_dir) is in use" in done.stderr
    assert not (here / "idx" / "notes").exists()
    held.close()
    assert subprocess.run(build, cwd=here, env=ENV, capture_output=True, text=True, timeout=120).returncode == 0


def test_a_second_server_on_a_folder_in_use_exits_naming_it(models_dir, tmp_path):
    """Real ``thoughtvec serve`` processes: the second one, one worker or several, stops at once with the message."""
    first, _ = serve_process(models_dir, "--index-dir", str(tmp_path / "idx"))
    try:
        refusals = {"": "is in use: another process", "--workers 2": "is being written by another process"}  # a writer, or readers
        for flags, said in refusals.items():
            t = time.monotonic()
            second = [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--models-dir", str(models_dir), "--port",
                      str(free_port()), "--index-dir", "idx", "--no-build-default-index", "--no-warmup", *flags.split()]  # fmt: skip
            done = subprocess.run(second, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
            assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
            assert f"thoughtvec serve: the index folder idx (index_dir) {said} (pid {first.pid})" in done.stderr
            print(f"second server ({flags or 'one worker'}) refused in {time.monotonic() - t:.1f} s")
    finally:
        first.terminate()
        first.wait(30)


@pytest.fixture
def read_only_view(tmp_path) -> tuple[Path, Path]:
    """(a folder, the same folder bind-mounted read-only), as a replica's ``:ro`` volume shows it (root and mount only)."""
    folder, view = tmp_path / "idx", tmp_path / "ro"
    folder.mkdir()
    view.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(view)], capture_output=True).returncode:
        pytest.skip("needs root and mount --bind -o ro")
    try:
        yield folder, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


def test_a_folder_mounted_read_only_is_served_read_only_and_never_beside_its_writer(read_only_view):
    folder, view = read_only_view
    writer = IndexStore(folder)
    writer.create(new_config(NewIndex("x", "tiny", "mean", 4)))  # makes the lock file
    with pytest.raises(IndexFolderLocked, match="being written by another store of this process"):
        IndexStore(view, read_only=READ_ONLY).open()  # the same folder, its lock is the same
    writer.close()
    with pytest.raises(IndexFolderLocked, match="Read-only file system .*served read-only \\(`--index-read-only`\\)"):
        IndexStore(view).open()  # a writer cannot lock (nor write) a read-only mount: the message says what to do
    readers = [IndexStore(view, read_only=READ_ONLY) for _ in range(2)]
    for reader in readers:
        assert reader.load_all() == ["x"]
    with pytest.raises(IndexFolderLocked, match="in use by read-only servers"):
        IndexStore(folder).open()
    for reader in readers:
        reader.close()
