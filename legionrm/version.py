"""The one version string: pyproject.toml reads it (``dynamic = ["version"]``),
``legionrm.__version__`` and ``legionrm --version`` show it."""

__version__ = "0.2.0"
