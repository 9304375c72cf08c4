"""``python -m dlaopt``: the same command line as the ``dlaopt`` console script."""

from dlaopt.cli import main

if __name__ == "__main__":
    main()
