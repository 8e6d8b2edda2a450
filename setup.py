"""The one piece of the build pyproject.toml does not hold: the broker's C record walker.

setuptools reads everything else from pyproject.toml (its ``ext-modules`` table is still
experimental there). The extension is optional: where it cannot be compiled (no C
compiler or no Python headers) the install still succeeds, and the broker walks records
with aiokafka's decoder and in Python instead (log_broker/_record_walk.py).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "headrace.log_broker._crecord_walk",
            sources=["log_broker/_crecord_walk.c"],
            optional=True,
        )
    ]
)
