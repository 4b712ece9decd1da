"""mmd: the Memory Standard (mm v1) daemon, its core library and session-log ingestion."""

__version__ = "0.1.0"
