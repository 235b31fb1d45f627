"""The README's two set-up commands, one after the other in one fresh venv, leave a working install.

``pip install .`` then running a compiled kernel (what ``biasdask demo`` does) must not write numba's
cache files into ``site-packages/biasdask/__pycache__``: ``pip install -e .`` would then uninstall the
package but leave that folder behind without ``__init__.py``, and from any directory but the checkout
``import biasdask`` would find an empty namespace package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

KERNEL = textwrap.dedent(
    """
    import numpy as np, biasdask
    rng = np.random.default_rng(0)
    options = biasdask.Resampling(n_permutations=999, seed=1)
    res = biasdask.permutation_test(rng.normal(size=3000), np.zeros(3000), resampling=options)
    print(biasdask.__file__, res.p_value)
    """
)


def _python(env_dir: Path) -> Path:
    return env_dir / ("Scripts" if sys.platform == "win32" else "bin") / "python"


@pytest.mark.slow
def test_install_run_then_editable_install_imports_from_anywhere(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = _python(env_dir)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dependencies come from this interpreter's site-packages, appended after the venv's own (a
    # plain path in a .pth file: this environment's own editable finder is not loaded).
    Path(purelib, "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["HOME"] = str(tmp_path / "home")
    pip = [python, "-m", "pip", "install", "-q", "--no-deps"]  # built in isolation, as the README's commands do
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    subprocess.run([*pip, str(ROOT)], check=True, env=env, cwd=elsewhere, capture_output=True)
    first = subprocess.run([python, "-c", KERNEL], env=env, cwd=elsewhere, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(purelib), first.stdout  # the installed copy ran, not the checkout
    installed = Path(purelib, "biasdask")
    assert not list(installed.rglob("*.nbi")), "numba cached kernels inside the installed package"
    assert list((tmp_path / "cache" / "biasdask" / "numba").rglob("*.nbi")), "no kernel cached per user"

    subprocess.run([*pip, "-e", str(ROOT)], check=True, env=env, cwd=elsewhere, capture_output=True)
    assert not installed.exists(), f"left behind by the uninstall: {sorted(installed.rglob('*'))[:5]}"
    second = subprocess.run(
        [python, "-c", "import biasdask; print(biasdask.__file__, biasdask.full_vocabulary_test.__name__)"],
        env=env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.split()[0] == str(ROOT / "biasdask" / "__init__.py")
