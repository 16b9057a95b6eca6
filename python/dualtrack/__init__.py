"""dualtrack's in-process side: what must run inside the user's PyTorch process.

The command-line tool (`dualtrack`, C++) does the parsing, rules, statistics and verdicts; this package
only holds the operator tracer and the capture API that `dualtrack run` injects into the training script.
"""

__version__ = "0.1.0"


def capture(name: str, value) -> None:
    """Records `value` under `name` for the current step when running under `dualtrack run`.

    Tensors go to tensors.safetensors as `capture/<name>/step<N>`; numbers (and one-element tensors)
    also go to metrics.jsonl. Outside `dualtrack run` this does nothing, so scripts can keep the call.
    """
    from . import _session

    session = _session.current()
    if session is not None:
        session.capture(name, value)
