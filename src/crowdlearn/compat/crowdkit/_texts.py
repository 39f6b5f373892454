"""crowd-kit's ROVER on crowdlearn's text engine."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd


class ROVER:
    """crowd-kit's ``ROVER`` on :class:`crowdlearn.aggregation.texts.ROVER`.

    ``data`` has crowd-kit's columns ``task``, ``worker`` and ``text``. Each text is cut
    by ``tokenizer``, and the tokens are handed to the engine's word alignment (a
    vocabulary with whitespace inside a token goes through space-free codes). The winning
    tokens are joined by ``detokenizer``. The tokenizer is the user's Python callable, so it
    runs once per text, as in crowd-kit. ``texts_`` is a Series named ``agg_text``,
    indexed by task.
    """

    def __init__(
        self,
        tokenizer: Callable[[str], list[str]],
        detokenizer: Callable[[list[str]], str],
        silent: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.detokenizer = detokenizer
        self.silent = silent
        self.texts_: pd.Series | None = None

    def fit(self, data: pd.DataFrame) -> ROVER:
        """Align and vote the texts of each task."""
        from crowdlearn.aggregation.texts import ROVER as Native
        from crowdlearn.data import Texts

        frame = data[["task", "worker", "text"]]  # a KeyError names a missing column
        if len(frame) == 0:
            self.texts_ = pd.Series([], dtype=object, name="agg_text")
            return self
        tokens = [list(self.tokenizer(text)) for text in frame["text"]]
        lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
        flat = pd.Series([tok for seq in tokens for tok in seq], dtype=object)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        spaced = flat.str.contains(r"\s", regex=True).any() if len(flat) else False
        if spaced:
            # a token with whitespace inside would be cut by the engine's word split:
            # such vocabularies go through space-free codes, sorted as the tokens
            codes, vocabulary = pd.factorize(flat, sort=True)
            width = len(str(max(len(vocabulary) - 1, 0)))
            words = np.char.add("w", np.char.zfill(codes.astype(str), width)).astype(object)
            lookup = dict(zip(coded_vocabulary(len(vocabulary), width), vocabulary, strict=True))
        else:
            words, lookup = flat.to_numpy(dtype=object), None
        joined = [" ".join(words[a:b]) for a, b in itertools.pairwise(bounds)]
        tasks = pd.Index(pd.unique(frame["task"])).sort_values()
        texts = Texts.from_arrays(
            frame["task"].to_numpy(), frame["worker"].to_numpy(), joined, task_ids=tasks.to_numpy()
        )
        model = Native().fit(texts)
        results = [
            self.detokenizer(
                [w if lookup is None else lookup[w] for w in str(text).split(" ") if w]
            )
            for text in model.texts_
        ]
        self.texts_ = pd.Series(results, index=tasks.rename("task"), name="agg_text")
        return self

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        """Fit and return ``texts_``."""
        self.fit(data)
        return self.texts_


def coded_vocabulary(n: int, width: int) -> list[str]:
    """The space-free code of each token number."""
    return [f"w{i:0{width}d}" for i in range(n)]
