"""The `toolsearch` console script: the same CLI as the Rust binary (every verb, flag and exit
status), run in-process by the native module with the model files of the installed packages."""

import os
import sys


def main() -> None:
    from . import _models
    from ._native import run_cli

    if "--models" not in sys.argv and "TOOLSEARCH_MODELS" not in os.environ:
        _models.export_for_cli()
    sys.exit(run_cli(["toolsearch", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
