"""``python -m crowdlearn``: the command-line interface, as the ``crowdlearn`` script."""

from crowdlearn.cli import main

if __name__ == "__main__":
    main()
