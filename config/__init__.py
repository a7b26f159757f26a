"""The configs ghost-trainer ships, as package data: installed, this folder is the package
``ghost.config.shipped_configs`` (``package-dir`` in pyproject.toml), which
``ghost.config.shipped`` reads through ``importlib.resources``. Nothing here is code."""
