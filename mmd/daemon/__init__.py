"""The mmd daemon: one process owning one memory root, served over ZeroMQ.

Modules, one concept each: ``config`` (the frozen :class:`~.config.Config`),
``protocol`` (wire shapes and the one error mapping), ``revision`` (building
the next snapshot, fingerprints, diffs), ``state`` (the current revision,
sessions, serialized writes), ``methods`` (the RPC methods), ``rpc`` (the
ROUTER loop), ``events`` (the PUB socket), ``watcher`` (external edits),
``scheduler`` (nudges, heartbeat, expiry, watchdog), ``notify`` (systemd),
``logs`` (stderr lines), ``lifecycle`` (startup and shutdown) and ``main``
(the ``mmd`` console script). Where the sockets live is
:mod:`mmd.core.endpoints`, shared with the client. Session logs reach the
review queue through ``ingest`` (``follow``: one thread over the source
folders; ``harvest``: slice → :mod:`mmd.candidates` → one transaction),
``queue`` and ``statedb``; which files are logs and how they read is
:mod:`mmd.sources`' business, never this package's.
"""
