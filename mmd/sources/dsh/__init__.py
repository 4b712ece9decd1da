"""DSH session logs (dsh-session-format.md): header, extraction, layout, the sliced read, the adapter.

Modules: :mod:`.header` (line 1), :mod:`.extract` (model-visible records),
:mod:`.layout` (which files, whose session, ``session.lock``),
:mod:`.session` (cursor + the one read), :mod:`.source` (:class:`~.source.DshSource`,
registered as ``SOURCES["dsh"]`` in :mod:`mmd.sources`).

Import the modules themselves: this package imports nothing, so
:mod:`mmd.sources.other` may use :mod:`.layout` without a circle.
"""
