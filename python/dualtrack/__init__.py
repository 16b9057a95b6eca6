"""dualtrack's in-process side: what must run inside the user's PyTorch process.

The command-line tool (`dualtrack`, C++) does the parsing, rules, statistics and verdicts; this
package only holds the operator tracer and the capture API that `dualtrack run` injects into the
training script.
"""

__all__ = ["capture", "__version__"]
__version__ = "0.1.0"


def capture(name: str, value: object, *, step: "int | None" = None) -> None:
    """Records `value` under `name` for a training step when running under `dualtrack run`.

    Tensors go to tensors.safetensors as `capture/<name>/step<N>`; numbers (and one-element tensors)
    also go to metrics.jsonl. Outside `dualtrack run` this does nothing, so scripts can keep the
    call.

    The step is the one under way; between `optimizer.step()` and the next forward pass it is the
    step that just finished, so that logging after the step (`opt.step(); capture("loss", loss)`)
    files the value where it was computed, the last step included. `step=N` names it explicitly (a
    value taken at the top of the loop, before the forward pass, belongs to the step about to run).
    """
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 1):
        raise ValueError(f"dualtrack.capture({name!r}): step must be a positive int, got {step!r}")
    from . import _session

    session = _session.current()
    if session is not None:
        session.capture(name, value, step)
