# A stand-in for a Python without matplotlib: with PYTHONPATH pointing at tests/data/no_matplotlib,
# `import matplotlib` fails as it does in a virtual environment that lacks it.
raise ImportError("No module named 'matplotlib' (tests/data/no_matplotlib stands in for a Python without it)")
