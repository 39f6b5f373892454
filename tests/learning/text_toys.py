"""A toy text crowd for the featurisers' tests: texts built from class-specific words
plus shared noise words, labelled by a simulated crowd (:func:`crowd_on_features`).

Importable because pytest puts this folder on ``sys.path``.
"""

from __future__ import annotations

import numpy as np

from crowdlearn.simulate import crowd_on_features

#: Words of each class; every text also draws words from :data:`NOISE`.
CLASS_WORDS = (
    ("rain", "cloud", "storm", "wet", "umbrella", "thunder"),
    ("sun", "beach", "warm", "summer", "bright", "heat"),
    ("snow", "ice", "frost", "cold", "winter", "sled"),
)
NOISE = ("the", "day", "was", "very", "and", "then", "we", "went", "out", "it", "felt")


def texts_of(y: np.ndarray, seed: int) -> list[str]:
    """One text per class code of ``y``: three class words and four noise words."""
    rng = np.random.default_rng(seed)
    texts = []
    for label in y.tolist():
        words = list(rng.choice(CLASS_WORDS[label], 3)) + list(rng.choice(NOISE, 4))
        rng.shuffle(words)
        texts.append(" ".join(words))
    return texts


def text_crowd(n_train: int = 150, n_test: int = 60, seed: int = 0):
    """``(crowd, train_texts, test_texts, y_test)``: a crowd of 12 workers (3 labels per
    task, half experts, half inexperts) on ``n_train`` texts of three classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n_train + n_test)
    texts = texts_of(y, seed + 1)
    crowd = crowd_on_features(
        np.zeros((n_train, 1)),
        y[:n_train],
        n_workers=12,
        labels_per_task=3,
        groups={"expert": 0.5, "inexpert": 0.5},
        seed=seed,
    )
    return crowd.with_features(None), texts[:n_train], texts[n_train:], y[n_train:]
