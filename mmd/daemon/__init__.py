"""The mmd daemon: one process owning one memory root, served over ZeroMQ.

Modules, one concept each: ``config`` (the frozen :class:`~.config.Config`),
``revision`` (building the next snapshot, fingerprints, diffs), ``state`` (the
current revision, sessions, serialized writes), ``review`` (the review queue's
use-cases: accept, reject), ``methods`` (one handler per method of the wire's
table, bound by name), ``rpc`` (the ROUTER loop and the one mapping of errors
to JSON-RPC), ``events`` (the PUB socket), ``jobs`` (scheduled jobs and event
payloads), ``watcher`` (external edits), ``scheduler`` (nudges, heartbeat,
expiry, watchdog), ``notify`` (systemd), ``logs`` (stderr lines), ``lifecycle``
(startup and shutdown on one exit stack) and ``main`` (the ``mmd`` console
script). The contract with clients — method table, topics, error codes,
message shapes, endpoints — is :mod:`mmd.wire`; the domain raises its
transport-neutral ``DaemonError`` and only ``rpc`` speaks JSON-RPC.
Session logs reach the review queue through ``ingest`` (``follow``: one
thread over the source folders; ``harvest``: slice → :mod:`mmd.candidates` →
one transaction), ``queue`` and ``statedb``; which files are logs and how
they read is :mod:`mmd.sources`' business, never this package's.
Arrows: ``daemon → wire, core, sources, candidates``, never upward.
"""
