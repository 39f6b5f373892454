"""``python -m benchmarks NAME [--quick] [--seeds N] [--out DIR] ...``, from a checkout."""

from benchmarks.cli import main

if __name__ == "__main__":
    main()
