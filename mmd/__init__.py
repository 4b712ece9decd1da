"""mmd: the Memory Standard (mm v1) daemon, its core library and session-log ingestion.

Packages, each importing only those listed before it: ``core`` (mm v1, standard
library only), ``sources`` (agent logs as utterances, standard library only),
``candidates`` (utterances to review candidates: ``core``, ``sources.base``),
``daemon`` (all of them).
"""

__version__ = "0.1.0"
