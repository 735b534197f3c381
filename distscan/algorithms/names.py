"""The names of the scan algorithms: which exist, which level each belongs to, and the tile
constants the kernels use."""

from __future__ import annotations

ALGORITHMS = ("auto", "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch", "coarsened",
              "hierarchical", "domino", "lookback", "lookahead")

BLOCK_LEVEL = frozenset({"kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch", "coarsened"})

DEVICE_LEVEL = frozenset({"hierarchical", "domino", "lookback", "lookahead"})

DEFAULT_DEVICE = "lookback"   # how tiles are combined unless a device-level name is given

DEFAULT_TILE = "coarsened"    # the scan inside a tile unless a block-level name is given

ITEMS = 8        # coarsened: items per thread (a run), as ITEMS in kernels/scan_kernels.cu

SUB_WINDOW = 32  # lookback: tiles per sub-window (one warp lane per tile), as in kernels/tile/tile_state.cuh

WINDOW = 1024    # lookback: tiles per window (32 sub-windows); one serial anchor hop per window


def resolve_algorithm(name) -> str:
    """An algorithm name -> its canonical spelling (case-insensitive, ``-`` for ``_`` accepted).

    Raises
    ------
    ValueError
        For a name that is not an algorithm, listing the valid ones.
    """
    key = name.strip().lower().replace("-", "_") if isinstance(name, str) else None
    if key in ALGORITHMS:
        return key
    valid = ", ".join(ALGORITHMS)
    raise ValueError(f"unknown algorithm {name!r}; choose one of {valid}")


def levels(name) -> tuple:
    """``(tile scan, device combination)`` that a name selects: ``"brent_kung"`` ->
    ``("brent_kung", "lookback")``, ``"domino"`` -> ``("coarsened", "domino")``;
    ``"auto"`` -> ``(None, None)`` (the backend's own choice)."""
    name = resolve_algorithm(name)
    if name == "auto":
        return (None, None)
    if name in BLOCK_LEVEL:
        return (name, DEFAULT_DEVICE)
    return (DEFAULT_TILE, name)
