import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.core.encoder import Encoder


def numpy_blas_threads() -> int:
    """Threads of the BLAS that numpy's own matrix products call."""
    libs = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas" and "numpy" in lib.filepath]
    if not libs:
        pytest.skip("numpy's BLAS is not one threadpoolctl can see")
    return libs[0].num_threads


def test_loading_an_encoder_keeps_numpy_blas_off_the_cores_onnx_runtime_owns(tmp_path):
    # numpy's OpenBLAS (pthreads) busy-waits its idle workers after every product, on the cores ONNX
    # Runtime's threads need: a view with a post-processing map ran 2.7x slower.
    with threadpool_limits(limits=2, user_api="blas"):
        assert numpy_blas_threads() == 2
        make_tiny_bundle(tmp_path / "tiny")
        enc = Encoder.load(tmp_path / "tiny")
        assert numpy_blas_threads() == 1
        assert np.isfinite(enc.encode(["a dog ran ."])).all()
