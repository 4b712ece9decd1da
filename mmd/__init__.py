"""mmd: the Memory Standard (mm v1) daemon, its core library and session-log ingestion.

Packages, each importing only those named before it (``tests/test_architecture.py`` holds it):

- ``core``: mm v1 itself, standard library only;
- ``wire``: the daemon↔client contract (methods, errors, events, endpoints) → ``core``;
- ``sources``: agent session logs as utterances, standard library only (``zstandard`` lazily);
- ``candidates``: utterances to review candidates → ``sources``, ``core``;
- ``inject``: baseline/delta injection, review dates, marked blocks → ``core``;
- ``daemon``: the ``mmd`` process → all of them.

The client, ``mmctl`` (``client/mmctl``), may import every package but ``daemon``.
"""

__version__ = "0.1.0"
