"""The daemon↔client contract, in one place: what goes over the wire and where it goes.

Owns: the RPC method table (:mod:`.methods`: ``METHODS``, one :class:`~.methods.Method`
constant per method, ``check_params``), the event topics and payloads
(:mod:`.events`: ``TOPICS``), JSON-RPC 2.0 framing, the daemon's error codes and its
transport-neutral :class:`~.protocol.DaemonError`, the messages' TypedDicts
(:mod:`.protocol`), and where a root's daemon listens (:mod:`.endpoints`). A method
name or an event topic is written once, here; ``schema/*.json`` says the same for
other languages (``tests/test_wire.py`` holds them equal).

Never: touches a socket, reads the environment on its own, or imports the daemon
or the client. Arrows: ``wire → mmd.core`` (errors) and the standard library only;
``mmd.daemon`` and ``mmctl`` both import it.
"""
