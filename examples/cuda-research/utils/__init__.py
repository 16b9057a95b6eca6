"""Small helpers shared by train.py and the notebooks."""
