"""``python -m skcrowd``: the ``skcrowd`` command line (:mod:`skcrowd.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
