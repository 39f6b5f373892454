"""Child process of the campaign-replay benchmark: cleanlab's ActiveLab scores.

Run by the interpreter of an environment that has cleanlab (it needs numpy, pandas
and cleanlab, not crowdlearn). ``--probe`` prints one JSON object with cleanlab's
``version``. ``--serve`` answers requests until its standard input closes: each line
is the path of an ``.npz`` file holding ``labels`` (tasks x annotators, NaN where an
annotator gave no label, cleanlab's ``labels_multiannotator``) and ``pred_probs``
(tasks x classes); the child writes
``cleanlab.multiannotator.get_active_learning_scores(labels, pred_probs)[0]`` next to
it as ``<path>.scores.npy`` and prints one JSON line, ``{"status": "ok"}`` or
``{"status": "error", "error": ...}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
import warnings


def scores(path: str) -> None:
    import numpy as np
    from cleanlab.multiannotator import get_active_learning_scores

    with np.load(path) as arrays:
        labels, pred_probs = arrays["labels"], arrays["pred_probs"]
    # cleanlab prints notes; the answer line must be the only thing on stdout
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        values, _ = get_active_learning_scores(labels, pred_probs)
    np.save(path + ".scores.npy", np.asarray(values, dtype=np.float64))


def serve() -> None:
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        try:
            scores(path)
            report = {"status": "ok"}
        except Exception as error:
            report = {"status": "error", "error": f"{error!r}\n{traceback.format_exc()[-2000:]}"}
        print(json.dumps(report), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    if args.probe:
        try:
            import importlib.metadata

            import cleanlab.multiannotator  # noqa: F401

            print(json.dumps({"status": "ok", "version": importlib.metadata.version("cleanlab")}))
        except Exception as error:
            print(json.dumps({"status": "error", "error": repr(error)}))
    elif args.serve:
        serve()


if __name__ == "__main__":
    main()
