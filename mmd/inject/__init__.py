"""Memory reaches the agent: baseline and delta injection, review dates, instruction-file blocks (issue 14).

Standard library and :mod:`mmd.core` only, so ``mmctl`` can import it without a
daemon. Modules: :mod:`.baseline` (the id-free index lines within a byte
budget), :mod:`.delta` (content hashes, client views, the baseline / delta /
reminder / none plan), :mod:`.due` (review dates: parsing and the due list),
:mod:`.blocks` (the ``<!-- mm:begin -->`` block of AGENTS.md / CLAUDE.md).
Nothing here stores client state, reads a clock or talks to the daemon.
"""
