"""Reading JSONL logs, plain or zstd, by cursor: :mod:`.decode` (complete lines only) and :mod:`.frames` (zstd frames).

Format-neutral: any adapter whose logs are JSON lines reads them through :class:`.decode.LogReader`.
``zstandard`` is imported only when a zstd log is read.
"""
