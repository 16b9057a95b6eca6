"""dualtrack's in-process side: what must run inside the user's PyTorch process.

The command-line tool (`dualtrack`, C++) does the parsing, rules, statistics and verdicts; this package
only holds the operator tracer and the capture API that `dualtrack run` injects into the training script.
"""

__version__ = "0.1.0"
