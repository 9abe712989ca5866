"""Package discovery (the rest of the configuration is in pyproject.toml).

pyproject.toml alone cannot both discover packages and map a folder to a subpackage, so:
every folder under ``stepguard/`` is a package (namespace folders too, so data-only folders such
as ``stepguard/guard/prompts`` ship their files), and ``adapters/`` and its folders install as
``stepguard.adapters``. A new folder or data file needs no edit here; tests/project/test_wheel.py fails
if the wheel misses any file of either tree.
"""

from setuptools import find_namespace_packages, setup

_SKIP = ["*__pycache__*", "*.egg-info*"]
core = find_namespace_packages(include=["stepguard", "stepguard.*"], exclude=_SKIP)
adapters = ["stepguard.adapters"] + [f"stepguard.adapters.{p}" for p in find_namespace_packages("adapters", exclude=_SKIP)]

setup(packages=core + adapters, package_dir={"stepguard.adapters": "adapters"})
