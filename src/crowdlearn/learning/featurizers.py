"""Featurisers: the users' raw items (texts, image files) as what a learner trains on.

A learner trains on task features (a numeric array) or task inputs (images read from
files in batches, :class:`~crowdlearn.data.inputs.ImageFolderInputs`). Users often
hold neither: they have each task's text, or the path of its image. A featuriser turns
those raw items into the learner's inputs:

* :class:`TextFeaturizer`: TF-IDF of word and/or character n-grams (scikit-learn's
  ``TfidfVectorizer`` fits the vocabulary and the inverse document frequencies),
  optionally reduced by a truncated SVD (latent semantic analysis); float32 features;
* :class:`SentenceTransformerFeaturizer`: sentence embeddings of a pretrained model of
  the optional package ``sentence-transformers`` (``pip install crowdlearn[text]``);
* :class:`ImageFeaturizer`: image paths as lazily read inputs, resized to one size,
  for the ``"cnn"`` backbone (or :func:`pretrained_backbone`).

:func:`fit_on_items` fits the featuriser on the training tasks' items only, trains the
learner on the result and keeps the fitted featuriser in the learner's ``featurizer_``:
``predict_proba`` then takes raw items (a list of texts or image paths) and
:meth:`~crowdlearn.learning.BaseLearner.save` writes the featuriser's fitted state
into the model file, so that a loaded model featurises new items the same way.

What the model file holds of a featuriser is plain data (:func:`featurizer_state`):
its kind, its parameters and its fitted arrays (the vocabulary as a list of strings,
the idf weights and SVD components as numpy arrays), never a pickled scikit-learn or
torch object; :func:`featurizer_from_state` rebuilds it from a closed table of kinds,
so the featuriser part of a file runs no code of its own on loading.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn._bounds import POSITIVE_INT, SEED, Bounds
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.errors import show
from crowdlearn.data.inputs import IMAGE_SUFFIXES, ImageFolderInputs, TaskInputs

#: The ``analyzer`` values of :class:`TextFeaturizer`.
TEXT_ANALYZERS = ("word", "char", "both")


def _check_bounds(owner: str, checks: Mapping[str, tuple[Any, Bounds]]) -> None:
    for name, (value, bounds) in checks.items():
        if value is None:
            continue
        problem = bounds.problem(value)
        if problem is not None:
            wrong_type = isinstance(value, bool) or not isinstance(value, (int, float, np.number))
            raise (TypeError if wrong_type else ValueError)(f"{owner}: {name} {problem}")


def _check_range(owner: str, name: str, value: Any) -> tuple[int, int]:
    if (
        not isinstance(value, (tuple, list))
        or len(value) != 2
        or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
        or not 1 <= value[0] <= value[1]
    ):
        raise ValueError(f"{owner}: {name} must be a pair (low, high) with 1 <= low <= high")
    return int(value[0]), int(value[1])


def _repr(featurizer: Any) -> str:
    """``Name(param=value, ...)`` with the parameters that differ from the defaults."""
    defaults = type(featurizer)().get_params()
    changed = {k: v for k, v in featurizer.get_params().items() if v != defaults[k]}
    return f"{type(featurizer).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"


def as_texts(texts: Any, what: str = "texts") -> list[str]:
    """The texts as a list of str; a missing text (None, NaN) or a non-text value is a
    CrowdDataError naming its positions."""
    if isinstance(texts, str):
        raise CrowdDataError(f"{what}: expected a sequence of texts, got one string")
    values = list(texts.tolist() if isinstance(texts, (np.ndarray, pd.Series)) else texts)
    bad = [i for i, value in enumerate(values) if not isinstance(value, str)]
    if bad:
        raise CrowdDataError(
            f"{what}: positions {show(bad)} hold no text (e.g. {values[bad[0]]!r}); "
            "give every task a text (an empty string is allowed)"
        )
    return values


class TextFeaturizer:
    """TF-IDF features of texts, optionally reduced by a truncated SVD.

    The vocabulary (at most ``max_features`` n-grams, the most frequent over the
    fitted texts) and the inverse document frequencies are fitted by scikit-learn's
    ``TfidfVectorizer``; :meth:`transform` counts the vocabulary's n-grams in new texts
    and weights them the same way (sublinear term frequency ``1 + log tf`` times the
    smoothed idf ``1 + log((1 + n) / (1 + df))``, then each row scaled to unit length).

    Parameters
    ----------
    max_features : int, default 5000
        Vocabulary size (per analyzer with ``"both"``).
    ngram_range : (int, int), default (1, 2)
        Word n-grams: single words and pairs of adjacent words.
    analyzer : {"word", "char", "both"}, default "word"
        Word n-grams (tokens of two or more letters or digits, lowercased), character
        n-grams inside word boundaries (``char_ngram_range``; robust to spelling
        variants), or both, each block scaled to unit length and concatenated.
    char_ngram_range : (int, int), default (2, 4)
        Character n-grams with ``analyzer="char"`` or ``"both"``.
    min_df : int, default 1
        Keep n-grams present in at least this many fitted texts.
    svd_components : int or None, default None
        Reduce the TF-IDF vectors to this many dimensions with a truncated SVD fitted
        on the same texts (at most the vocabulary size minus one); None keeps the
        sparse TF-IDF columns, made dense (``max_features`` float32 per task).
    random_state : int, default 0
        Seed of the randomised SVD.

    Attributes
    ----------
    vocabularies_ : list of list of str
        Per block (word, char), the n-gram of each feature column.
    idfs_ : list of ndarray
        Per block, the idf weight of each column.
    components_ : ndarray or None
        The SVD's components, shape (n_components, n_tfidf_columns).
    n_features_out_ : int

    Examples
    --------
    >>> featurizer = TextFeaturizer(max_features=20).fit(["a red apple", "a green pear"])
    >>> featurizer.transform(["red pear", "blue sky"]).shape
    (2, 6)
    """

    def __init__(
        self,
        max_features: int = 5000,
        ngram_range: tuple[int, int] = (1, 2),
        analyzer: str = "word",
        char_ngram_range: tuple[int, int] = (2, 4),
        min_df: int = 1,
        svd_components: int | None = None,
        random_state: int = 0,
    ) -> None:
        self.max_features = max_features
        self.ngram_range = ngram_range
        self.analyzer = analyzer
        self.char_ngram_range = char_ngram_range
        self.min_df = min_df
        self.svd_components = svd_components
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters (as scikit-learn's ``get_params``)."""
        return {
            "max_features": self.max_features,
            "ngram_range": tuple(self.ngram_range),
            "analyzer": self.analyzer,
            "char_ngram_range": tuple(self.char_ngram_range),
            "min_df": self.min_df,
            "svd_components": self.svd_components,
            "random_state": self.random_state,
        }

    def __repr__(self) -> str:
        return _repr(self)

    def _check(self) -> None:
        name = type(self).__name__
        _check_bounds(
            name,
            {
                "max_features": (self.max_features, POSITIVE_INT),
                "min_df": (self.min_df, POSITIVE_INT),
                "svd_components": (self.svd_components, POSITIVE_INT),
                "random_state": (self.random_state, SEED),
            },
        )
        if self.analyzer not in TEXT_ANALYZERS:
            raise ValueError(
                f"{name}: analyzer must be one of {TEXT_ANALYZERS}, got {self.analyzer!r}"
            )
        _check_range(name, "ngram_range", self.ngram_range)
        _check_range(name, "char_ngram_range", self.char_ngram_range)

    def _blocks(self) -> list[tuple[str, tuple[int, int]]]:
        """(scikit-learn analyzer, n-gram range) of each block of columns."""
        word = ("word", tuple(self.ngram_range))
        char = ("char_wb", tuple(self.char_ngram_range))
        return {"word": [word], "char": [char], "both": [word, char]}[self.analyzer]

    def fit(self, texts: Any) -> TextFeaturizer:
        """Fit the vocabulary, the idf weights (and the SVD) on ``texts``."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._check()
        values = as_texts(texts)
        if not values:
            raise CrowdDataError("TextFeaturizer: fit needs at least one text")
        vocabularies, idfs = [], []
        for analyzer, ngrams in self._blocks():
            vectorizer = TfidfVectorizer(
                analyzer=analyzer,
                ngram_range=ngrams,
                max_features=int(self.max_features),
                min_df=int(self.min_df),
                sublinear_tf=True,
            )
            try:
                vectorizer.fit(values)
            except ValueError as error:  # an empty vocabulary, min_df above the count
                raise CrowdDataError(
                    f"TextFeaturizer: no features from the texts ({error})"
                ) from None
            vocabulary = vectorizer.vocabulary_
            vocabularies.append(sorted(vocabulary, key=vocabulary.__getitem__))
            idfs.append(np.asarray(vectorizer.idf_, dtype=np.float64))
        self.vocabularies_, self.idfs_, self.components_ = vocabularies, idfs, None
        if self.svd_components is not None:
            from sklearn.decomposition import TruncatedSVD

            tfidf = self._tfidf(values)
            k = max(1, min(int(self.svd_components), tfidf.shape[1] - 1))
            if tfidf.shape[1] < 2:
                self.components_ = np.ones((1, tfidf.shape[1]))
            else:
                svd = TruncatedSVD(n_components=k, random_state=self.random_state)
                self.components_ = svd.fit(tfidf).components_.astype(np.float64)
        self.n_features_out_ = (
            sum(len(v) for v in vocabularies)
            if self.components_ is None
            else len(self.components_)
        )
        return self

    def _tfidf(self, texts: list[str]) -> Any:
        """The sparse TF-IDF matrix of ``texts`` on the fitted vocabulary (float64)."""
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.preprocessing import normalize

        blocks = []
        for (analyzer, ngrams), terms, idf in zip(
            self._blocks(), self.vocabularies_, self.idfs_, strict=True
        ):
            counter = CountVectorizer(
                analyzer=analyzer,
                ngram_range=ngrams,
                vocabulary={term: column for column, term in enumerate(terms)},
            )
            counts = counter.transform(texts).astype(np.float64).tocsr()
            counts.data = 1.0 + np.log(counts.data)  # sublinear tf
            blocks.append(normalize(counts @ sp.diags(idf), norm="l2"))
        return blocks[0] if len(blocks) == 1 else sp.hstack(blocks, format="csr")

    def transform(self, texts: Any) -> np.ndarray:
        """The features of ``texts``: float32, shape (n_texts, ``n_features_out_``)."""
        from crowdlearn.data._memory import check_allocation

        if not hasattr(self, "vocabularies_"):
            raise CrowdDataError("TextFeaturizer is not fitted yet; call fit(texts)")
        values = as_texts(texts)
        check_allocation(
            4 * len(values) * self.n_features_out_,
            f"text features of shape ({len(values)}, {self.n_features_out_})",
        )
        tfidf = self._tfidf(values)
        dense = tfidf.toarray() if self.components_ is None else tfidf @ self.components_.T
        return np.asarray(dense, dtype=np.float32).reshape(len(values), self.n_features_out_)

    def fit_transform(self, texts: Any) -> np.ndarray:
        """:meth:`fit`, then :meth:`transform` of the same texts."""
        return self.fit(texts).transform(texts)

    def _state(self) -> dict[str, Any]:
        return {
            "vocabularies": [list(v) for v in self.vocabularies_],
            "idfs": [np.asarray(v) for v in self.idfs_],
            "components": self.components_,
        }

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.vocabularies_ = [[str(t) for t in v] for v in state["vocabularies"]]
        self.idfs_ = [np.asarray(v, dtype=np.float64) for v in state["idfs"]]
        components = state["components"]
        self.components_ = None if components is None else np.asarray(components, np.float64)
        self.n_features_out_ = (
            sum(len(v) for v in self.vocabularies_)
            if self.components_ is None
            else len(self.components_)
        )


#: The optional extra that installs ``sentence-transformers``.
TEXT_EXTRA = "pip install 'crowdlearn[text]' (or pip install sentence-transformers)"


class SentenceTransformerFeaturizer:
    """Sentence embeddings of a pretrained ``sentence-transformers`` model.

    Nothing is fitted on the training texts (the model is pretrained); the model file
    of a learner keeps the model's name or path, and a loaded learner loads it again
    when it first featurises texts (the optional package must then be installed, and
    the model available: downloaded by the package, or a local folder).

    Parameters
    ----------
    model_name_or_path : str, default "all-MiniLM-L6-v2"
        A model name known to ``sentence-transformers`` or a local model folder.
    batch_size : int, default 64
        Texts encoded at a time.
    normalize : bool, default True
        Scale each embedding to unit length.
    device : str or None, default None
        The package's choice when None.
    """

    def __init__(
        self,
        model_name_or_path: str = "all-MiniLM-L6-v2",
        batch_size: int = 64,
        normalize: bool = True,
        device: str | None = None,
    ) -> None:
        self.model_name_or_path = model_name_or_path
        self.batch_size = batch_size
        self.normalize = normalize
        self.device = device

    def __repr__(self) -> str:
        return _repr(self)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters."""
        return {
            "model_name_or_path": self.model_name_or_path,
            "batch_size": self.batch_size,
            "normalize": self.normalize,
            "device": self.device,
        }

    def _model(self) -> Any:
        model = getattr(self, "_loaded", None)
        if model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ImportError(
                    "SentenceTransformerFeaturizer needs the optional package "
                    f"sentence-transformers: {TEXT_EXTRA}"
                ) from None
            model = SentenceTransformer(self.model_name_or_path, device=self.device)
            self._loaded = model
        return model

    def fit(self, texts: Any) -> SentenceTransformerFeaturizer:
        """Load the model (nothing is learned from ``texts``)."""
        _check_bounds(type(self).__name__, {"batch_size": (self.batch_size, POSITIVE_INT)})
        as_texts(texts)
        self._model()
        self.fitted_ = True
        return self

    def transform(self, texts: Any) -> np.ndarray:
        """Embeddings of ``texts``: float32, shape (n_texts, model dimension)."""
        values = as_texts(texts)
        embeddings = self._model().encode(
            values,
            batch_size=int(self.batch_size),
            convert_to_numpy=True,
            normalize_embeddings=bool(self.normalize),
            show_progress_bar=False,
        )
        return np.asarray(embeddings, dtype=np.float32).reshape(len(values), -1)

    def fit_transform(self, texts: Any) -> np.ndarray:
        return self.fit(texts).transform(texts)

    def _state(self) -> dict[str, Any]:
        return {}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.fitted_ = True


class ImageFeaturizer:
    """Image files as lazily read learner inputs, every image resized to one size.

    :meth:`transform` returns an :class:`~crowdlearn.data.inputs.ImageFolderInputs`
    without cache: the trainer and ``predict_proba`` read the images of one mini-batch
    at a time with Pillow, so a hundred thousand images are never in memory at once
    (only their paths). Train with ``backbone="cnn"`` (a small network from scratch)
    or a network of :func:`pretrained_backbone`.

    Parameters
    ----------
    size : (int, int), default (32, 32)
        Width and height every image is resized to.
    mode : {"RGB", "L"}, default "RGB"
        Colour (3 channels) or greyscale (1 channel).

    Examples
    --------
    >>> ImageFeaturizer(size=(16, 16)).item_shape
    (3, 16, 16)
    """

    def __init__(self, size: tuple[int, int] = (32, 32), mode: str = "RGB") -> None:
        self.size = size
        self.mode = mode

    def __repr__(self) -> str:
        return _repr(self)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters."""
        return {"size": tuple(self.size), "mode": self.mode}

    @property
    def item_shape(self) -> tuple[int, int, int]:
        """Shape of one task's input: (channels, height, width)."""
        return (3 if self.mode == "RGB" else 1, int(self.size[1]), int(self.size[0]))

    def fit(self, paths: Any) -> ImageFeaturizer:
        """Check the parameters and the paths (nothing is learned from the images)."""
        size = self.size
        if (
            not isinstance(size, (tuple, list))
            or len(size) != 2
            or any(POSITIVE_INT.problem(v) is not None for v in size)
        ):
            raise ValueError(f"ImageFeaturizer: size must be (width, height), got {size!r}")
        if self.mode not in ("RGB", "L"):
            raise ValueError(f"ImageFeaturizer: mode must be 'RGB' or 'L', got {self.mode!r}")
        self.transform(paths)
        self.fitted_ = True
        return self

    def transform(self, paths: Any) -> ImageFolderInputs:
        """The images at ``paths`` as inputs read on demand (a missing file is a
        CrowdDataError naming it)."""
        values = list(paths.tolist() if isinstance(paths, (np.ndarray, pd.Series)) else paths)
        bad = [i for i, p in enumerate(values) if not isinstance(p, (str, os.PathLike))]
        if bad:
            raise CrowdDataError(f"image paths: positions {show(bad)} hold no path")
        size = (int(self.size[0]), int(self.size[1]))
        return ImageFolderInputs(values, size=size, mode=self.mode, cache=False)

    def fit_transform(self, paths: Any) -> ImageFolderInputs:
        return self.fit(paths).transform(paths)

    def _state(self) -> dict[str, Any]:
        return {}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.fitted_ = True


def images_by_task(folder: str | os.PathLike[str], task_ids: Sequence[Any]) -> list[Path]:
    """The image of each task in ``folder``: the file named by the task id, with an
    image suffix (``<folder>/<task id>.png``, ``.jpg``...); a task without one, or
    with two, is a CrowdDataError naming it."""
    root = Path(folder)
    if not root.is_dir():
        raise CrowdDataError(f"{root}: no such image folder")
    found: dict[str, list[Path]] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            path = Path(entry.path)
            if path.suffix.lower() in IMAGE_SUFFIXES and entry.is_file():
                found.setdefault(path.stem, []).append(path)
    paths = []
    missing, doubled = [], []
    for task in task_ids:
        matches = found.get(str(task), [])
        if len(matches) == 1:
            paths.append(matches[0])
        else:
            (missing if not matches else doubled).append(task)
    if doubled:
        raise CrowdDataError(f"{root}: several images for tasks {show(doubled)}")
    if missing:
        raise CrowdDataError(
            f"{root}: no image for tasks {show(missing)} "
            f"(expected e.g. {root / str(missing[0])}.png)"
        )
    return paths


def pretrained_backbone(name: str = "resnet18", pretrained: bool = True) -> Any:
    """A backbone spec (a callable ``(item_shape, n_classes) -> nn.Module``) building
    the network ``name`` of ``timm``, else of ``torchvision``, with ``n_classes``
    outputs; their pretrained weights are downloaded by those packages. Neither is a
    dependency of crowdlearn: an ImportError says so when both are absent."""
    try:
        import timm
    except ImportError:
        timm = None
    if timm is not None:

        def build_timm(item_shape: tuple[int, ...], n_classes: int) -> Any:
            return timm.create_model(
                name, pretrained=pretrained, num_classes=n_classes, in_chans=item_shape[0]
            )

        return build_timm
    try:
        import torchvision
    except ImportError:
        raise ImportError(
            f"pretrained_backbone({name!r}) needs timm or torchvision (pip install timm); "
            "without them use backbone='cnn' (a small network trained from scratch)"
        ) from None

    def build_torchvision(item_shape: tuple[int, ...], n_classes: int) -> Any:
        weights = "DEFAULT" if pretrained else None
        return torchvision.models.get_model(name, weights=weights, num_classes=n_classes)

    return build_torchvision


#: Kind of each featuriser in a model file -> its class (the closed table loading uses).
KINDS: dict[str, type] = {
    "tfidf": TextFeaturizer,
    "sentence-transformer": SentenceTransformerFeaturizer,
    "image": ImageFeaturizer,
}


def featurizer_state(featurizer: Any) -> dict[str, Any]:
    """A fitted featuriser as plain data: ``{"kind", "params", "state"}``."""
    for kind, cls in KINDS.items():
        if type(featurizer) is cls:
            return {"kind": kind, "params": featurizer.get_params(), "state": featurizer._state()}
    raise TypeError(
        f"cannot save a featuriser of type {type(featurizer).__name__}; "
        f"the known ones are {', '.join(c.__name__ for c in KINDS.values())}"
    )


def featurizer_from_state(state: Mapping[str, Any]) -> Any:
    """The featuriser :func:`featurizer_state` described."""
    kind = state.get("kind")
    if kind not in KINDS:
        raise CrowdDataError(f"the model file holds an unknown featuriser kind {kind!r}")
    featurizer = KINDS[kind](**state["params"])
    featurizer._load_state(state["state"])
    return featurizer


def is_raw(X: Any) -> bool:
    """Whether ``X`` holds raw items (texts or paths), not numeric features or inputs."""
    if isinstance(X, TaskInputs):
        return False
    if isinstance(X, (np.ndarray, pd.Series)):
        return X.dtype.kind in "OUS"
    if isinstance(X, (list, tuple)):
        return bool(X) and isinstance(X[0], (str, os.PathLike))
    return False


def items_by_task(items: Any, data: CrowdData, what: str = "items") -> list[Any]:
    """Raw items in task-code order, from a sequence aligned with the task codes or a
    Mapping/Series keyed by task id (every task must have one)."""
    if isinstance(items, (Mapping, pd.Series)):
        table = pd.Series(items) if isinstance(items, Mapping) else items
        present = pd.Index(data.task_ids).isin(table.index)
        if not present.all():
            raise CrowdDataError(f"{what}: no entry for tasks {show(data.task_ids[~present])}")
        return table.loc[data.task_ids].tolist()
    values = list(items.tolist() if isinstance(items, np.ndarray) else items)
    if len(values) != data.n_tasks:
        raise CrowdDataError(
            f"{what}: {len(values)} items for {data.n_tasks} tasks (give one per task, in "
            "task-code order, or a mapping from task id)"
        )
    return values


def fit_on_items(
    learner: Any,
    data: CrowdData,
    items: Any,
    featurizer: Any = None,
    valid: Any = "crowd",
) -> Any:
    """Fit ``featurizer`` on the tasks' raw items, train ``learner`` on the result and
    keep the featuriser in ``learner.featurizer_``.

    Parameters
    ----------
    learner : BaseLearner
    data : CrowdData
        The crowd's annotations.
    items : sequence or mapping
        Each task's text (or image path): one per task in task-code order, or a
        Mapping/Series from task id.
    featurizer : TextFeaturizer, SentenceTransformerFeaturizer or ImageFeaturizer
        Default: ``TextFeaturizer()``. It is fitted on these training items only.
    valid : as in :meth:`BaseLearner.fit`

    Returns
    -------
    The fitted learner; ``learner.predict_proba(new_items)`` featurises new raw items.

    Examples
    --------
    >>> from crowdlearn.data import CrowdData
    >>> from crowdlearn.learning import TwoStage
    >>> data = CrowdData.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["a", "a", "b", "b"])
    >>> model = fit_on_items(
    ...     TwoStage(max_epochs=2, progress=False), data, ["cold snow", "hot sun"], valid=None
    ... )
    >>> model.predict_proba(["snow", "sun and snow"]).shape
    (2, 2)
    """
    featurizer = TextFeaturizer() if featurizer is None else featurizer
    values = items_by_task(items, data)
    inputs = featurizer.fit(values).transform(values)
    if isinstance(inputs, np.ndarray):
        data = data.with_features(inputs)
    else:
        data = data.with_inputs(inputs)
    learner.fit(data, valid=valid)
    learner.featurizer_ = featurizer
    return learner
