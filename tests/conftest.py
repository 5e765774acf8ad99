"""Test-suite wide settings."""

import os

# Sleeping (not spinning) OpenMP threads: tests, training helpers and servers share 2 cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
