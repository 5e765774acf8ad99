"""A FAISS store's process dying, for tests that restart a store within one test process."""

from __future__ import annotations

from thoughtvec.service.index.store import IndexStore


def crash(store: IndexStore) -> None:
    """What the kernel does for a store whose process is killed (``kill -9``): its descriptors closed, the logs' and
    the folder lock's, so that the next store (the next process) can take the folder; nothing is folded into a
    snapshot and nothing else written, as a store dropped without :meth:`IndexStore.close` leaves the folder."""
    for entry in list(store._entries.values()):
        entry.wal.close()
    if store._folder is not None:
        store._folder.release()
        store._folder = None


def restart(store: IndexStore, **kwargs) -> IndexStore:
    """The store the next process makes of ``store``'s folder (``kwargs``: its other arguments), ``store``'s process
    having died (:func:`crash`; one closed before stays as it was): loaded, and holding the folder."""
    crash(store)
    fresh = IndexStore(store.root, **kwargs)
    fresh.load_all()
    return fresh


def peek(store: IndexStore) -> IndexStore:
    """What a process started now would load of ``store``'s folder while ``store`` goes on: the files as they are
    (nothing closed or folded). ``store`` lets go of the folder's lock for the load, its logs left open, and takes it
    again; the fresh store lets go of everything once loaded, so it is read in memory and never written."""
    assert store._folder is not None, "peek at a store that holds its folder"
    store._folder.release()
    store._folder = None
    fresh = IndexStore(store.root)
    try:
        fresh.load_all()
    finally:
        crash(fresh)
        store.open()
    return fresh
