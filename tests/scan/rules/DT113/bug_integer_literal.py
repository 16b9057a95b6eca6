# `.to(0)` (an integer literal, which IntegerDevice handles) is skipped by the statement-level prefilter (PythonScanner::Maybe: no trigger word in the statement), so it is reported only when the statement happens to hold a hot name; here it is not reported.
import torch


def place(model):
    model = model.to(0)  # expect: DT113
    return model
