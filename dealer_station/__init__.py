"""The imperative shell around the pure controller: command line, (later) the daemon loop."""
__version__ = "0.1.0"
