"""Builds librcip with cargo (or takes a prebuilt one) and ships it inside
the ``rcip`` package.

``pip install ./bindings/python`` runs this from the repository (pip builds
in place), so the crate is two directories up. ``RCIP_PREBUILT_LIBRARY=path``
skips cargo and bundles that file instead (packagers, and ``make wheel``,
which reuses the library ``make lib`` built). The bundled copy is stripped
(``strip --strip-unneeded``: about 7 MB instead of about 40 with the
release build's line tables) unless ``RCIP_STRIP=0``. An editable install
(``pip install -e``) links ``rcip/librcip.so`` in the source tree to the
library, so a later ``cargo build`` is seen without reinstalling.

The package itself is pure Python (ctypes); only the wheel's platform tag
says it carries a native library (``make wheel`` then lets auditwheel give
it its manylinux tag).
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

NO_CARGO = """rcip: cannot build the package: it bundles librcip, the Rust library,
and building it needs cargo, which was not found (looked for %r).
Either
  - install Rust (https://rustup.rs; Rust 1.88 or later) and run pip again, or
  - build the library elsewhere (`cargo build --release -p rcip-capi` or `make lib`
    in the repository) and point pip at it:
      RCIP_PREBUILT_LIBRARY=/path/to/librcip.so pip install ./bindings/python
"""


def library_name():
    if sys.platform == "darwin":
        return "librcip.dylib"
    if sys.platform == "win32":
        return "rcip.dll"
    return "librcip.so"


def cargo_output_name():
    """What cargo names the C ABI crate's shared library (crates/rcip-capi)."""
    if sys.platform == "darwin":
        return "librcip_capi.dylib"
    if sys.platform == "win32":
        return "rcip_capi.dll"
    return "librcip_capi.so"


def build_library():
    prebuilt = os.environ.get("RCIP_PREBUILT_LIBRARY")
    if prebuilt:
        if not os.path.isfile(prebuilt):
            raise SystemExit("rcip: RCIP_PREBUILT_LIBRARY=%s is not a file" % prebuilt)
        return os.path.abspath(prebuilt)
    manifest = os.path.join(ROOT, "Cargo.toml")
    if not os.path.isfile(manifest):
        raise SystemExit(
            "rcip: cannot find the rcip crate at %s; build from the repository "
            "(pip install ./bindings/python) or set RCIP_PREBUILT_LIBRARY" % manifest
        )
    cargo = os.environ.get("CARGO", "cargo")
    if shutil.which(cargo) is None:
        raise SystemExit(NO_CARGO % cargo)
    subprocess.check_call([cargo, "build", "--release", "-p", "rcip-capi", "--manifest-path", manifest])
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", cargo_output_name())


def strip(path):
    if os.environ.get("RCIP_STRIP", "1") == "0" or sys.platform != "linux":
        return
    tool = os.environ.get("STRIP", "strip")
    if shutil.which(tool) is None:
        print("rcip: %s not found: the bundled library keeps its debug information" % tool, file=sys.stderr)
        return
    subprocess.check_call([tool, "--strip-unneeded", path])


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        library = build_library()
        if getattr(self, "editable_mode", False):
            # pip install -e: the package is imported from the source tree.
            link = os.path.join(HERE, "rcip", library_name())
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(library, link)
            return
        destination = os.path.join(self.build_lib, "rcip", library_name())
        self.mkpath(os.path.dirname(destination))
        shutil.copyfile(library, destination)
        os.chmod(destination, 0o755)
        strip(destination)


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
