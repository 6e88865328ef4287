"""The binding's cffi declarations are generated from the header."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cdef_is_generated_from_the_header() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cdef.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_installed_cdef_matches_checkout() -> None:
    import adil._cdef as installed

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_cdef
    finally:
        sys.path.pop(0)
    assert installed.CDEF.strip() == gen_cdef.header_to_cdef(gen_cdef.HEADER.read_text()).strip()
