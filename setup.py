"""Build the optional native core (SPEC §11); all metadata lives in pyproject.toml.

``optional=True``: without a C compiler, the Python headers or OpenSSL's
libcrypto headers the extension is skipped and the pure-Python path runs.
SHA-256 comes from libcrypto, linked as CPython's own ``_hashlib`` links it.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ract_cli._core",
            ["ract_cli/_core.c"],
            libraries=["crypto"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-pthread"],
            extra_link_args=["-pthread"],
        )
    ]
)
