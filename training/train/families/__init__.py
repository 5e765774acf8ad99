"""Registry of model families: bundle family name -> Family. Adding a family = one module + one line."""

from __future__ import annotations

import importlib

from thoughtvec.training.train.families.base import Family

_MODULES = {
    "skip-thought": "thoughtvec.training.train.families.skipthought",
    "mean-max-aae": "thoughtvec.training.train.families.aae",
    "invertible-decoder": "thoughtvec.training.train.families.invertible",
}


def get_family(name: str) -> Family:
    if name not in _MODULES:
        raise ValueError(f"unknown family {name!r}; choose one of {sorted(_MODULES)}")
    return importlib.import_module(_MODULES[name]).FAMILY


def family_of_variant(variant: str) -> Family:
    """The family that has a preset called ``variant`` (variant names are unique across families)."""
    for name in _MODULES:
        fam = get_family(name)
        if variant in fam.presets:
            return fam
    raise ValueError(f"no family has a variant {variant!r}; variants: {sorted(all_variants())}")


def all_variants() -> dict[str, str]:
    return {v: name for name in _MODULES for v in get_family(name).presets}
