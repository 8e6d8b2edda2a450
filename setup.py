"""The pieces of the build pyproject.toml does not hold: the broker's C extensions, and
the link tree an editable install adds for type checkers.

The C extensions are the broker's record walker and its many-file fsync; setuptools reads
everything else from pyproject.toml (its ``ext-modules`` table is still experimental
there). Both are optional: where they cannot be compiled (no C compiler or
no Python headers) the install still succeeds, and the broker walks records with
aiokafka's decoder and in Python instead (log_broker/records/_walk.py), and syncs files
one ``os.fsync`` at a time (log_broker/storage/_fsyncs.py).

``pip install -e .`` serves pyproject.toml's ``package-dir`` mapping (``headrace.dsl`` is
``dsl/``) with setuptools' import hook, which mypy and editors do not follow; the editable
wheel therefore also names a tree of links in the installed shape (scripts/editable_tree.py).
"""

import runpy
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.editable_wheel import editable_wheel

HERE = Path(__file__).resolve().parent


class EditableWheelWithLinkTree(editable_wheel):
    """setuptools' editable wheel, and beside it the link tree type checkers read."""

    def run(self) -> None:
        super().run()
        # Loaded from its path only here: an editable install is made from a checkout, which
        # has scripts/; building a wheel or an sdist never runs this.
        tree = runpy.run_path(str(HERE / "scripts" / "editable_tree.py"))
        tree["add_link_tree"](HERE, self.distribution.package_dir, Path(self.dist_dir))


setup(
    cmdclass={"editable_wheel": EditableWheelWithLinkTree},
    ext_modules=[
        Extension(
            "headrace.log_broker.records._crecord_walk",
            sources=["log_broker/records/_crecord_walk.c"],
            optional=True,
        ),
        Extension(
            "headrace.log_broker.storage._csync",
            sources=["log_broker/storage/_csync.c"],
            optional=True,
        ),
    ],
)
