"""Say which Python ``make`` builds the virtualenv with, and refuse one routeplan cannot run on.

    python3 scripts/python_check.py            # make demo: 3.11 (what pyproject.toml allows)
    python3 scripts/python_check.py 3.11.5     # make test: the docs' Markdown extensions need it

Run by the interpreter it checks (the Makefile's ``$(PYTHON)``, default ``python3``), so it uses
nothing newer than Python 3.6 can parse: the point is to refuse an old one with a clear fix.
"""

import sys

SUPPORTED = (3, 11)  # pyproject.toml: requires-python = ">=3.11,<3.12"


def verdict(version, executable, minimum=(3, 11, 0)):
    """``(ok, message)`` for an interpreter of ``version`` (a tuple) at ``executable``."""
    shown = ".".join(str(v) for v in version[:3])
    if tuple(version[:2]) == SUPPORTED and tuple(version[:3]) >= tuple(minimum):
        return True, f"make: using Python {shown} ({executable})"
    wanted = ".".join(str(v) for v in minimum)
    return False, (
        f"make: {executable} is Python {shown}, but routeplan needs Python 3.11 ({wanted} or "
        "later in 3.11; its Spark, Airflow and Delta pins are tested there).\n"
        "Fix: install Python 3.11 (Debian/Ubuntu: apt-get install python3.11 python3.11-venv; "
        "or pyenv install 3.11) and run make again with PYTHON=python3.11, e.g. "
        "`make PYTHON=python3.11 demo`; remove .venv/ first if it was built with another "
        "Python."
    )


def main(argv):
    minimum = tuple(int(p) for p in argv[1].split(".")) if len(argv) > 1 else (3, 11, 0)
    ok, message = verdict(sys.version_info, sys.executable, minimum)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
