"""Compiled kernels persist across processes when the package folder is
read-only (a system install, a container image): once per user, not once
per process; and nothing fails where no folder can be written at all.

The package is copied to a temporary folder and made read-only; fresh
processes import it from there.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skcrowd

CHILD = r"""
import json, sys
from numba.core import event

compiled = []


class Count(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)


event.register("numba:compile", Count())
import numpy as np
import skcrowd
from skcrowd._kernels._config import cache_dir, kernel_path

ratings = skcrowd.Ratings([0, 0, 1, 1, 2, 2, 2], [0, 1, 0, 1, 0, 1, 2], [0, 0, 1, 1, 0, 1, 1])
with kernel_path("jit"):  # the compiled kernels, not the numpy twins of small data
    labels = skcrowd.MajorityVote().fit_predict(ratings)
print(json.dumps({"file": skcrowd.__file__, "cache": cache_dir(), "compiled": compiled,
                  "labels": labels.tolist()}))
"""

def _read_only_tree(path):
    for root, dirs, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        os.chmod(root, 0o555)


def _writable_tree(path):
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o755)


# root writes through permission bits: there, the read-only folders are
# read-only bind mounts in a mount namespace of the child's own
MOUNT_READ_ONLY = ('for d in "$@"; do mount --bind "$d" "$d" && '
                   'mount -o remount,ro,bind "$d" "$d" || exit 97; done; '
                   'exec "$PYTHON" -c "$CHILD"')


@pytest.fixture
def read_only_install(tmp_path):
    """A read-only copy of the package and a home folder for its user."""
    if os.name != "posix":
        pytest.skip("permissions by chmod")
    if os.geteuid() == 0 and shutil.which("unshare") is None:
        pytest.skip("root without unshare cannot make a folder read-only")
    site = tmp_path / "site"
    shutil.copytree(Path(skcrowd.__file__).parent, site / "skcrowd",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _read_only_tree(site)
    home = tmp_path / "home"
    home.mkdir()
    yield site, home
    _writable_tree(tmp_path)


def _run(site, home, read_only=(), **env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), HOME=str(home), PYTHON=sys.executable, CHILD=CHILD,
               **env_extra)
    folders = [str(site), *map(str, read_only)]
    if os.geteuid() == 0:
        command = ["unshare", "-m", "sh", "-c", MOUNT_READ_ONLY, "sh", *folders]
    else:
        for folder in read_only:
            os.chmod(folder, 0o555)
        command = [sys.executable, "-c", CHILD]
    out = subprocess.run(command, env=env, cwd=str(home), capture_output=True, text=True)
    if out.returncode == 97:
        pytest.skip("no read-only bind mount here")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_read_only_install_compiles_once_per_user(read_only_install):
    site, home = read_only_install
    first = _run(site, home)
    assert first["file"].startswith(str(site))
    assert first["cache"] == str(home / ".cache" / "skcrowd" / "numba")
    assert first["compiled"], "the first process compiles its kernels"
    assert not any(p.name == "__pycache__" for p in (site / "skcrowd" / "_kernels").iterdir())
    second = _run(site, home)
    assert second["compiled"] == [], "the second process loads them from the user's cache"
    assert second["labels"] == first["labels"] == [0, 1, 1]


def test_nothing_writable_still_fits(read_only_install):
    site, home = read_only_install
    if os.geteuid() != 0:
        pytest.skip("only root can make the system's temp folders read-only (in a namespace)")
    closed = home.parent / "closed"
    closed.mkdir()
    # every folder tempfile would fall back to, read-only too
    temp = [d for d in ("/tmp", "/var/tmp", "/usr/tmp") if os.path.isdir(d)]
    result = _run(site, home, read_only=[home, closed, *temp], XDG_CACHE_HOME=str(closed),
                  TMPDIR=str(closed))
    assert result["cache"] == ""
    assert result["labels"] == [0, 1, 1]
