"""The PEP 517 backend of `pip wheel .`, `pip install .` and `uv build`: maturin's, with PyPI's
tag rules.

maturin's own backend builds with `--compatibility off` unless it is given build arguments, and
so tags the wheel `linux_x86_64`, which PyPI refuses. This backend passes
`--compatibility pypi` instead: maturin checks the glibc symbols the native module uses, tags the
wheel with the lowest manylinux tag they allow (`manylinux_2_34` on a Debian 12 builder,
`manylinux_2_28` in the release workflow's containers), and fails rather than give a tag PyPI
would refuse. Build arguments a user gives (`--config-settings build-args=...` or
`MATURIN_PEP517_ARGS`) are passed on as they are. Every other hook is maturin's own.
"""

import os

import maturin
from maturin import *  # noqa: F401,F403  (the hooks this module does not change)

_DEFAULT_ARGS = "--compatibility pypi"


def _with_default_args(config_settings):
    settings = dict(config_settings or {})
    given = settings.get("maturin.build-args", settings.get("build-args"))
    if given is None and not os.environ.get("MATURIN_PEP517_ARGS"):
        settings["maturin.build-args"] = _DEFAULT_ARGS
    return settings


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the wheel as maturin does, tagged for PyPI unless told otherwise."""
    return maturin.build_wheel(wheel_directory, _with_default_args(config_settings), metadata_directory)
