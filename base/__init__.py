"""What every layer needs and nothing of ours: it imports no other package of headrace.

- :mod:`headrace.base.progress`: a one-line progress bar for terminals.
"""
