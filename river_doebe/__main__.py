"""``python -m river_doebe``: the same as the ``river-doebe`` command."""

from river_doebe.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
