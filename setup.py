"""Kinetoscope: the PyTorch Profiler for TensorBoard. ``pip install .`` needs no Node: the built
frontend in ``tb_plugin/static/`` is committed."""

import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "tb_plugin" / "__init__.py").read_text()).group(1)

setup(
    name="kinetoscope",
    version=VERSION,
    description="PyTorch Profiler for TensorBoard: fast, offline, correct on every Kineto trace format",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.9",
    # "kinetoscope" (the notebook API's public name) is a small package kept inside tb_plugin/public/
    packages=find_packages(include=["tb_plugin", "tb_plugin.*"]) + ["kinetoscope"],
    package_dir={"kinetoscope": "tb_plugin/public/kinetoscope"},
    package_data={"tb_plugin": ["static/*"]},
    include_package_data=True,
    install_requires=[
        "tensorboard>=2.11",
        "numpy>=1.22",
        "fsspec>=2023.1.0",
        "msgspec>=0.18",
        "isal>=1.6",  # ISA-L's gzip inflater: a small gzip trace read 2.4x faster than zlib (storage/inflate.py)
        "orjson>=3.9",
        "platformdirs>=3",
        "regex>=2022.1.18",  # timeline search: a regex engine with a timeout (ReDoS bound)
        "werkzeug>=1.0",
        "PyYAML>=5.1",
    ],
    extras_require={
        "s3": ["s3fs>=2026.9.0"],
        "gcs": ["gcsfs>=2026.10.1"],
        "azure": ["adlfs>=2026.8.0"],
        "dask": ["dask[distributed]>=2026.8.0"],
        "serve": ["flask>=2.2", "waitress>=3.0"],  # kinetoscope serve: the tab without TensorBoard
        "notebook": ["pandas>=2.0"],  # import kinetoscope: tables as DataFrames
        "mcp": ["mcp>=2.3,<3"],  # kinetoscope mcp: the MCP server for coding agents
        "test": [
            "pytest>=8",
            "flask>=2.2",
            "waitress>=3.0",  # kinetoscope serve's server: tests/unit/interfaces/test_serve.py, tests/e2e/test_serve_waitress.py
            "pandas>=2.0",
            "mcp>=2.3,<3",
            "hypothesis>=6.100",
            "playwright==1.65.2",
            "moto[server]==5.2.1",
            "gcp-storage-emulator==2026.7.19",
            "ruff==0.17.6",  # the static checks in run_tests.sh: lint + format (ruff.toml)
            "mypy==2.4.1",  # type checks (mypy.ini) against .mypy-baseline
            "pytest-xdist==3.8.0",  # ./run_tests.sh runs the tests in 2 processes
        ],
    },
    entry_points={
        "tensorboard_plugins": ["kinetoscope = tb_plugin.plugin:KinetoscopePlugin"],
        "console_scripts": ["kinetoscope = tb_plugin.cli:entry"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
