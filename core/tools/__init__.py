"""Core's tools, never shipped in the extension: the command line, benchmarks, the demo, training, evaluation."""
