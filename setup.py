"""The one piece of the build pyproject.toml does not hold: the broker's C extensions,
its record walker and its many-file fsync.

setuptools reads everything else from pyproject.toml (its ``ext-modules`` table is still
experimental there). Both are optional: where they cannot be compiled (no C compiler or
no Python headers) the install still succeeds, and the broker walks records with
aiokafka's decoder and in Python instead (log_broker/_record_walk.py), and syncs files
one ``os.fsync`` at a time (log_broker/storage/_fsyncs.py).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "headrace.log_broker._crecord_walk",
            sources=["log_broker/_crecord_walk.c"],
            optional=True,
        ),
        Extension(
            "headrace.log_broker.storage._csync",
            sources=["log_broker/storage/_csync.c"],
            optional=True,
        ),
    ]
)
