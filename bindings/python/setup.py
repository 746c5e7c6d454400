"""Builds librcip with cargo and ships it inside the ``rcip`` package.

``pip install ./bindings/python`` runs this from the repository (pip builds
in place), so the crate is two directories up. ``RCIP_PREBUILT_LIBRARY=path``
skips cargo and bundles that file instead (for packagers who built it
already). The package itself is pure Python (ctypes); only the wheel's
platform tag says it carries a native library.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def library_name():
    if sys.platform == "darwin":
        return "librcip.dylib"
    if sys.platform == "win32":
        return "rcip.dll"
    return "librcip.so"


def build_library():
    prebuilt = os.environ.get("RCIP_PREBUILT_LIBRARY")
    if prebuilt:
        return prebuilt
    manifest = os.path.join(ROOT, "Cargo.toml")
    if not os.path.isfile(manifest):
        raise SystemExit(
            "rcip: cannot find the rcip crate at %s; build from the repository "
            "(pip install ./bindings/python) or set RCIP_PREBUILT_LIBRARY" % manifest
        )
    cargo = os.environ.get("CARGO", "cargo")
    subprocess.check_call([cargo, "build", "--release", "--lib", "--manifest-path", manifest])
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", library_name())


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        library = build_library()
        destination = os.path.join(self.build_lib, "rcip", library_name())
        self.mkpath(os.path.dirname(destination))
        shutil.copyfile(library, destination)
        os.chmod(destination, 0o755)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary}

try:
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:  # setuptools < 70.1
        from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:  # pragma: no cover
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
