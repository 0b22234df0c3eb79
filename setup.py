"""Package discovery only (everything else is in pyproject.toml).

The host is the import package ``optmap`` under ``core/optmap/``; the built-in plugins are
``optmap.plugins`` under ``plugins/``. Every package below either folder is found here, so a new
built-in plugin needs nothing more than its entry point in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages("core"), "optmap.plugins", *("optmap.plugins." + p for p in find_packages("plugins"))],
    package_dir={"": "core", "optmap.plugins": "plugins"},
)
