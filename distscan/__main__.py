"""``python -m distscan INPUT.npy ...``: see :mod:`distscan.cli` (``python -m distscan --help``)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
