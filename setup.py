"""The optional compiled walk (collector/extract/_wire.c, the module
tooltrail.collector.extract._wire): built when a C compiler and the Python headers are there;
otherwise the install goes on with a warning and the pure walk runs."""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the extension only makes extraction faster."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any build failure falls back to pure Python
            self._warn(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._warn(exc)

    @staticmethod
    def _warn(exc: Exception) -> None:
        print(f"WARNING: the compiled OTLP walk was not built ({exc}); tooltrail will use the "
              "pure-Python walk (slower)", file=sys.stderr)


setup(
    ext_modules=[Extension("tooltrail.collector.extract._wire",
                           ["tooltrail/collector/extract/_wire.c"],
                           extra_compile_args=["-O2"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
