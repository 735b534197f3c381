"""The writes of one rank's chunks (:func:`distscan.pipeline.chunks.run_chunks`): each chunk's output
once it is final, at most ``engine.out_slots`` writes under way, in the order they become final.

A prescanned part (``CpuEngine.prescan``) also writes each chunk's prescan at once, before the
exchange ("speculative" writes).  That is safe because the output is a temporary file that is
published only when every rank agrees.  After the exchange a chunk whose rescan may change it is
withdrawn (its write dropped if not yet submitted, else waited for: a rescan must not change rows
that a write is reading, and the new write must land after the old), rescanned and written again;
a settled chunk's speculative write is its final one.
"""

from __future__ import annotations

import collections


class Writes:
    """The write queue of one rank's part: ``engine`` gives the rows and frees the buffers, ``files``
    writes, ``chunks`` are the part's ``(lo, hi)`` rows, ``row_bytes`` an output row's size, ``bar``
    the progress bar (each chunk's bytes counted once, however often it is written)."""

    def __init__(self, engine, files, chunks, row_bytes: int, bar):
        self.engine, self.files, self.chunks, self.row_bytes, self.bar = engine, files, chunks, row_bytes, bar
        self.ready = collections.deque()        # chunks whose output is final, waiting for a slot
        self.writing = collections.deque()      # (chunk, future, speculative) in write order
        self.speculative = collections.deque()  # prescanned chunks waiting for a slot
        self.spec_written = set()               # prescanned chunks whose speculative write is done
        self.settled = set()                    # prescanned chunks that are final (Writes.settle)
        self.counted = set()                    # chunks the progress bar has counted

    def final(self, k, block: bool) -> None:
        """Chunk ``k``'s output is final: queued, and the queue moved on (``block``: until it is
        submitted)."""
        self.ready.append(k)
        self.pump(block)

    def speculate(self, k) -> None:
        """Prescanned chunk ``k``'s output as it is now: written if a slot is free, never waited for."""
        self.speculative.append(k)
        self.harvest(False)
        while self.speculative and len(self.writing) < self.engine.out_slots:
            k = self.speculative.popleft()
            self.writing.append((k, self.files.write(self.chunks[k][0], self.engine.prescanned(k)), True))

    def withdraw(self, k) -> None:
        """Prescanned chunk ``k`` is to be rescanned: its speculative write is dropped or waited for."""
        if k in self.speculative:
            self.speculative.remove(k)
        while any(w[0] == k for w in self.writing):
            self.harvest(True)

    def settle(self, k, rescanned: bool) -> None:
        """Prescanned chunk ``k``'s output is final: ``rescanned`` (after :meth:`withdraw`), it is
        written again; else its speculative write, under way or done, is the final one (or, never
        submitted, it is written as any final chunk)."""
        written = not rescanned and k not in self.speculative
        if not rescanned and not written:
            self.speculative.remove(k)
        self.engine.settle(k, written)
        self.settled.add(k)
        if not written:
            self.final(k, block=True)
        elif k in self.spec_written:
            self.engine.done(k)  # its write is done: the output buffer is free

    def harvest(self, block: bool) -> None:
        """The writes done (``block``: at least the oldest), their errors raised."""
        while self.writing and (self.writing[0][1].done() or block):
            k, fut, spec = self.writing.popleft()
            fut.result()  # raises the write's error
            if not spec or k in self.settled:
                self.engine.done(k)  # a prescanned chunk's input stays until it is settled
            if spec:
                self.spec_written.add(k)
            if k not in self.counted:
                self.counted.add(k)
                lo, hi = self.chunks[k]
                self.bar.update((hi - lo) * self.row_bytes)
            block = False

    def pump(self, block: bool) -> None:
        """Submit the final chunks while slots are free (``block``: all of them, waiting for slots)."""
        self.harvest(False)
        while self.ready:
            if len(self.writing) >= self.engine.out_slots:
                if not block:
                    return
                self.harvest(True)
                continue
            k = self.ready.popleft()
            rows = self.engine.output(k).result()
            self.writing.append((k, self.files.write(self.chunks[k][0], rows), False))

    def finish(self) -> None:
        """Every queued write submitted and done."""
        self.pump(block=True)
        while self.writing:
            self.harvest(True)
