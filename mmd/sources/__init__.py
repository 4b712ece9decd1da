"""Agent session logs as utterances: one adapter per format behind one contract.

See :mod:`.base` for the contract (:class:`Utterance`, :class:`Position`,
:class:`Slice`, :class:`Source`). Standard library only (``zstandard`` lazily);
nothing here imports ``mmd.daemon``, watches files or stores state.
"""

from .base import WHO, Position, Slice, Source, Utterance, Who

__all__ = ["WHO", "Position", "Slice", "Source", "Utterance", "Who"]
