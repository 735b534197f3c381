"""Parallel ``.npy`` files: each rank reads its slice, all ranks write one file.

The ``.npy`` format itself (parsing and checking a header, building one) lies in
:mod:`distscan.io.npy`, reading in :mod:`distscan.io.read`, the temporary names in
:mod:`distscan.io.names`, writing in :mod:`distscan.io.writer`; their names are
re-exported here.  What the ranks do together:

- :func:`open_input` reads the header once on rank 0 and broadcasts it, so every
  rank gets the same header or the same exception.
- :func:`block_split` is the balanced block distribution of rows over ranks
  (parts differ by at most one row, the first ``n % size`` ranks get the extra
  row); :func:`read_rows` reads rows ``[start, stop)`` only, in chunks of at most
  ``CHUNK_BYTES`` so slices past 2 GiB work.
- :class:`NpyWriter` writes one ``.npy`` in parallel: rank 0 writes the header,
  every rank its rows with positional writes (``os.pwritev`` on its own file
  descriptor, safe from several threads at once; MPI-IO's independent
  ``File.Write_at`` with ``method="mpiio"``), so a rank that fails cannot leave
  the others blocked inside a collective write.  The file is written under a
  short temporary name in the destination folder (see :func:`temp_name_for`;
  locked by its creator, so a later run can tell a stale one from a live one and
  removes stale ones) and renamed only after every rank succeeded; on failure
  the temporary file is removed.  Nothing is flushed to the disk unless asked
  (``fsync=True``: the data, then the folder after the rename), as
  :func:`numpy.save` and ``cp`` do.  Inputs must be regular files (a FIFO or
  device is refused, never opened blocking); ``--force`` replaces regular files
  only.

Every step that can fail on some ranks only is agreed collectively before the
next collective (see :mod:`distscan.dist.agree`).
"""

from __future__ import annotations

from .names import (Interrupted, check_replaceable, clear_interrupted, create_temp, emergency_cleanup,  # noqa: F401
                    forget_temps, interrupted_by, is_published, mark_interrupted, remove_stale_temps,
                    temp_name_for)
from .npy import (MAGIC, NpyHeader, check_same_file, check_unchanged, file_kind, header_bytes,  # noqa: F401
                  open_regular, read_header)
from .read import CHUNK_BYTES, block_split, open_input, read_rows, same_file  # noqa: F401
from .writer import NpyWriter  # noqa: F401

__all__ = ["NpyHeader", "read_header", "open_input", "block_split", "read_rows", "header_bytes", "NpyWriter",
           "same_file", "CHUNK_BYTES", "check_replaceable", "temp_name_for", "remove_stale_temps",
           "emergency_cleanup", "is_published", "mark_interrupted", "clear_interrupted", "interrupted_by",
           "forget_temps", "Interrupted", "check_same_file", "check_unchanged"]
