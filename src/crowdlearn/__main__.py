"""``python -m crowdlearn``: the same as the ``crowdlearn`` command."""

from crowdlearn._console import main

if __name__ == "__main__":
    main()
