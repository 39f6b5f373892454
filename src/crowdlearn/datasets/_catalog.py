"""The registered datasets: metadata, files with their digests and sources, and loaders.

Each file is pinned to a commit of a public GitHub repository and to its sha256, as
recorded in the ``PROVENANCE.md`` of the shared dataset tree; the statistics are the
verified ones listed there (and checked by the test suite).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from crowdlearn.datasets import _loaders
from crowdlearn.datasets._types import Dataset, DatasetInfo

Loader = Callable[[Mapping[str, Path], DatasetInfo], Dataset]


@dataclass(frozen=True)
class _Folder:
    """A folder of a GitHub repository at a fixed commit, and its place under the data root."""

    repo: str
    commit: str
    remote: str
    local: str

    def path(self, filename: str) -> str:
        """Path of one of its files relative to the data root."""
        return f"{self.local}/{filename}"

    def url(self, filename: str) -> str:
        """Public URL of one of its files at the pinned commit."""
        return (
            f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.remote}/{filename}"
        )

    def describe(self) -> str:
        """Where the files come from, for a dataset's description."""
        return f"github.com/{self.repo}, commit {self.commit}, folder {self.remote}/"


@dataclass(frozen=True)
class Entry:
    """A registered dataset: its info, the path of each file by role, and its loader."""

    info: DatasetInfo
    roles: Mapping[str, str]
    loader: Loader


def _entry(
    name: str,
    *,
    title: str,
    summary: str,
    citation: str,
    license: str,
    folder: _Folder,
    files: Mapping[str, tuple[str, str]],
    loader: Loader,
    n_tasks: int,
    n_workers: int | None,
    n_annotations: int | None,
    n_classes: int,
    class_names: tuple[str, ...] | None = None,
    has_features: bool = False,
    has_truth: bool = True,
    has_valid: bool = False,
    has_test: bool = False,
) -> Entry:
    """Build a registry entry; ``files`` maps each role to ``(filename, sha256)``."""
    info = DatasetInfo(
        name=name,
        title=title,
        description=f"{summary} Source: {folder.describe()}. License: {license}.",
        citation=citation,
        license=license,
        n_tasks=n_tasks,
        n_workers=n_workers,
        n_annotations=n_annotations,
        n_classes=n_classes,
        class_names=class_names,
        has_features=has_features,
        has_truth=has_truth,
        has_valid=has_valid,
        has_test=has_test,
        files=MappingProxyType({folder.path(fn): sha for fn, sha in files.values()}),
        sources=MappingProxyType({folder.path(fn): folder.url(fn) for fn, _ in files.values()}),
    )
    roles = MappingProxyType({role: folder.path(fn) for role, (fn, _) in files.items()})
    return Entry(info, roles, loader)


# ---------------------------------------------------------------------- LabelMe

_LABELME = _entry(
    "labelme",
    title="LabelMe scene classification (Rodrigues & Pereira 2018)",
    summary=(
        "8-class scene classification of LabelMe images. Amazon Mechanical Turk workers "
        "labelled the 1000 training images (2547 labels, 1 to 3 per image); the 500 "
        "validation and 1188 test images have ground truth only. Features are VGG16 "
        "convolutional features average-pooled to 512 dimensions (float32). The answer "
        "matrix is the 59-worker version (the 77-column original without its 18 empty "
        "columns); the files' class codes 0..7 are loaded as the scene names of class_names."
    ),
    citation=(
        "Rodrigues, F. & Pereira, F. C. (2018). Deep learning from crowds. "
        "Proceedings of the AAAI Conference on Artificial Intelligence."
    ),
    license=(
        "no explicit data license; redistributed in fmenat/PyLearningCrowds (code under "
        "GPL-3.0) crediting Rodrigues & Pereira and LabelMe; cite the paper"
    ),
    folder=_Folder(
        "fmenat/PyLearningCrowds",
        "0edf617d0357a43b48dc53f10f4181ec0163d4db",
        "data/LabelMe",
        "labelme/fmenat_PyLearningCrowds",
    ),
    files={
        "answers": (
            "answers.txt",
            "354c282e10835a59962494acb1d180fe997b65a0aa1e27f870cdb4ef51ef3e2b",
        ),
        "train_features": (
            "LabelMe_VGG_avg_train.npy",
            "0ddfbcbd722aab70e81525a459cc37d47c1d344322b401ee35a3e9b158a209e8",
        ),
        "train_truth": (
            "LabelMe_Z_train.txt",
            "229556bdc5da327dd7d4e4154ba180969091c83f43cf8cbee3727131c5a062f6",
        ),
        "valid_features": (
            "LabelMe_VGG_avg_valid.npy",
            "cb80ce99ef9fc80c666e6b9c43259ee0aac4e0cf82f8ac654b8bb309fb28953d",
        ),
        "valid_truth": (
            "LabelMe_Z_valid.txt",
            "40aba43f903a539b38243c411e214da1f8c696cc47aa59811cc3388cc6899892",
        ),
        "test_features": (
            "LabelMe_VGG_avg_test.npy",
            "af407538f702f98e775f233652152cdcb58583c9d4668492308151c126ce7873",
        ),
        "test_truth": (
            "LabelMe_Z_test.txt",
            "6d508b638d41fa84b2628615270456df96a49dce18054d201ac6261b03ea77bc",
        ),
    },
    loader=_loaders.load_labelme,
    n_tasks=1000,
    n_workers=59,
    n_annotations=2547,
    n_classes=8,
    class_names=(
        "highway",
        "insidecity",
        "tallbuilding",
        "street",
        "forest",
        "coast",
        "mountain",
        "opencountry",
    ),
    has_features=True,
    has_valid=True,
    has_test=True,
)

# ---------------------------------------------------------------------- Music genre

_GENRES = (
    "blues",
    "classical",
    "country",
    "disco",
    "hiphop",
    "jazz",
    "metal",
    "pop",
    "reggae",
    "rock",
)

_MUSIC = _entry(
    "music",
    title="Music genre classification (Rodrigues, Pereira & Ribeiro 2013)",
    summary=(
        "10-class genre classification of 30-second GTZAN song excerpts. Amazon "
        "Mechanical Turk workers labelled 700 training songs (2945 labels, 4.2 per song); "
        "300 test songs have ground truth only. Features are 124 Marsyas audio features "
        "(float64 as parsed from the CSV files). Tasks are the song file names; classes "
        "are the genre names in alphabetical order. These are the "
        "music_genre_classification files of Rodrigues' mturk-datasets archive."
    ),
    citation=(
        "Rodrigues, F., Pereira, F. & Ribeiro, B. (2013). Learning from multiple "
        "annotators: distinguishing good from random labelers. Pattern Recognition Letters."
    ),
    license="unspecified (no license file in the source repository); cite the paper",
    folder=_Folder(
        "shahanaibrahimosu/end-to-end-crowdsourcing",
        "7653680c475ba8faa5d4a7b104b42a2a5204cef9",
        "data/Music",
        "music_genre_rodrigues",
    ),
    files={
        "annotations": (
            "music_genre_mturk.csv",
            "20abf70b06d77653742125d8ae57a6b46d3e6d5e0291de4fc9c76d433cd9b834",
        ),
        "train": (
            "music_genre_gold.csv",
            "28cd73e9bf555e5847de0b0fc4c4998264d4a272d657c452edf2c93c206bda64",
        ),
        "test": (
            "music_genre_test.csv",
            "952b423483bef4e0aa38b628815232b600a745d028fc8dfe8addd49e616931b8",
        ),
    },
    loader=_loaders.load_music,
    n_tasks=700,
    n_workers=44,
    n_annotations=2945,
    n_classes=10,
    class_names=_GENRES,
    has_features=True,
    has_test=True,
)

# ---------------------------------------------------------------------- Bluebirds

_BLUEBIRDS = _entry(
    "bluebirds",
    title="Bluebirds (Welinder, Branson, Belongie & Perona 2010)",
    summary=(
        "Binary classification of 108 bird images (Indigo Bunting vs Blue Grosbeak): 39 "
        "workers each labelled every image (4212 labels). Tasks and workers are the "
        "integer ids of the CUBAM demo files; classes are False and True as stored there."
    ),
    citation=(
        "Welinder, P., Branson, S., Belongie, S. & Perona, P. (2010). The multidimensional "
        "wisdom of crowds. Advances in Neural Information Processing Systems (NIPS)."
    ),
    license="Clear BSD (CUBAM, (c) 2011-2012 Peter Welinder, California Institute of Technology)",
    folder=_Folder(
        "welinder/cubam",
        "fe5ba700f1adbb489c69af311558d64370d73d36",
        "demo/bluebirds",
        "welinder_cubam/bluebirds",
    ),
    files={
        "annotations": (
            "labels.yaml",
            "8b1b28e4b869b19bb03beac476c7073149cef784f9524ebe17380a1292a6126c",
        ),
        "truth": ("gt.yaml", "c9eb769c845ca99495a07b5c28c4290c78436fd8eac65c0747736c4ef8126340"),
    },
    loader=_loaders.load_bluebirds,
    n_tasks=108,
    n_workers=39,
    n_annotations=4212,
    n_classes=2,
)

# ---------------------------------------------------------------------- Snow et al. (2008)

_SNOW_FOLDER = _Folder(
    "edwinrobots/bayesian_combination_tutorial2",
    "f98448e2e9a941463aa92f418eefd1f43bd5a637",
    "all_collected_data",
    "snow2008_nlp_mturk/all_collected_data",
)


def _snow(
    name: str,
    sha256: str,
    *,
    title: str,
    summary: str,
    n_tasks: int,
    n_workers: int,
    n_classes: int,
) -> Entry:
    """A task of Snow et al.: ten Amazon Mechanical Turk labels per item, with gold."""
    return _entry(
        name,
        title=f"{title} (Snow, O'Connor, Jurafsky & Ng 2008)",
        summary=(
            f"{summary} Each item has 10 labels from distinct workers (no worker labels an "
            "item twice; a repeated pair would be an error) and an expert gold label. "
            "Tasks are the items' orig_id, workers the AMT worker ids, classes the response "
            "values as written in the file."
        ),
        citation=(
            "Snow, R., O'Connor, B., Jurafsky, D. & Ng, A. Y. (2008). Cheap and fast - but "
            "is it good? Evaluating non-expert annotations for natural language tasks. EMNLP."
        ),
        license=(
            "unspecified for the data ((c) the original authors); the source repository's "
            "code is under MIT"
        ),
        folder=_SNOW_FOLDER,
        files={"annotations": (f"{name}.standardized.tsv", sha256)},
        loader=_loaders.load_snow,
        n_tasks=n_tasks,
        n_workers=n_workers,
        n_annotations=10 * n_tasks,
        n_classes=n_classes,
    )


_RTE = _snow(
    "rte",
    "3187c5de59b9b9c596d490d25b5f5f108090a35cbdd10e81f21e6d1939d6ba79",
    title="Recognizing textual entailment",
    summary="Does the text entail the hypothesis? 800 PASCAL RTE-1 pairs, labels 0/1.",
    n_tasks=800,
    n_workers=164,
    n_classes=2,
)
_TEMP = _snow(
    "temp",
    "7f74de9f36a0d3dfdc1f51e6433526abfc788c616d0c2d04a96206780ac74860",
    title="Temporal event ordering",
    summary="Did one event happen before or after another? 462 event pairs, labels 1/2.",
    n_tasks=462,
    n_workers=76,
    n_classes=2,
)
_WSD = _snow(
    "wsd",
    "77b77c0f63803bcb62d3a15c199e301bacbd4dbe012278600bd34f1e5f8a8ed9",
    title="Word sense disambiguation",
    summary="Sense of the word 'president' in 177 sentences, labels 1/2/3.",
    n_tasks=177,
    n_workers=34,
    n_classes=3,
)

# ---------------------------------------------------------------------- ActiveCrowdToolkit

_ACTIVE_CROWD_FOLDER = _Folder(
    "orchidproject/active-crowd-toolkit",
    "2c0c194e85ca126545bd830d811ec39151bdd448",
    "Data",
    "active_crowd_toolkit",
)


def _active_crowd(
    name: str,
    filename: str,
    sha256: str,
    *,
    title: str,
    summary: str,
    citation: str,
    n_tasks: int,
    n_workers: int,
    n_annotations: int,
    n_classes: int,
    class_names: tuple[str, ...] | None = None,
) -> Entry:
    """A dataset of the ActiveCrowdToolkit benchmark (headerless worker/task/label/gold CSV)."""
    return _entry(
        name,
        title=f"{title} (ActiveCrowdToolkit {filename})",
        summary=(
            f"{summary} Every task has a gold label. Ids are read as integers where the "
            "file has integers and as strings otherwise; the undocumented fifth column of "
            "some files is ignored. When a worker labelled a task more than once (in "
            "separate HITs) every answer is kept, as in the toolkit and the published "
            "statistics of these data."
        ),
        citation=(
            f"{citation} Distributed with: Venanzi, M., Parson, O., Rogers, A. & Jennings, "
            "N. R. (2015). The ActiveCrowdToolkit: an open-source tool for benchmarking "
            "active learning algorithms for crowdsourcing research. HCOMP."
        ),
        license="Apache-2.0 (ActiveCrowdToolkit repository)",
        folder=_ACTIVE_CROWD_FOLDER,
        files={"annotations": (filename, sha256)},
        loader=_loaders.load_active_crowd,
        n_tasks=n_tasks,
        n_workers=n_workers,
        n_annotations=n_annotations,
        n_classes=n_classes,
        class_names=class_names,
    )


_WEATHER_SUMMARY = (
    "Sentiment of 300 tweets about the weather, 5 classes coded 0..4 (origin per the "
    "literature: the CrowdFlower weather sentiment data of the CrowdScale 2013 challenge)."
)
_WEATHER_CITATION = "CrowdFlower weather sentiment data, CrowdScale shared task (2013)."
_ZENCROWD_SUMMARY = (
    "Entity linking: is a candidate URL the right entity for a mention? 2040 links, "
    "labels 0/1; tasks are 'mention-link' strings"
)
_ZENCROWD_CITATION = (
    "Demartini, G., Difallah, D. E. & Cudre-Mauroux, P. (2012). ZenCrowd: leveraging "
    "probabilistic reasoning and crowdsourcing techniques for large-scale entity linking. WWW."
)

_CF = _active_crowd(
    "cf",
    "CF.csv",
    "18bc4dc1780ce1f2b2f9ffedc493f4b8f9a4590a3fde8dce2e5d3367bcc8686e",
    title="Weather sentiment, CrowdFlower workers",
    summary=_WEATHER_SUMMARY,
    citation=_WEATHER_CITATION,
    n_tasks=300,
    n_workers=461,
    n_annotations=1720,
    n_classes=5,
)
_CF_AMT = _active_crowd(
    "cf_amt",
    "CF_amt.csv",
    "c44d4bf3cbf08f343072d86a10e9085ab91885a2b4bbb1d0d03eb2cd461f6c5b",
    title="Weather sentiment, Amazon Mechanical Turk workers",
    summary=f"{_WEATHER_SUMMARY} The same tweets as 'cf', labelled again on Mechanical Turk.",
    citation=_WEATHER_CITATION,
    n_tasks=300,
    n_workers=110,
    n_annotations=6030,
    n_classes=5,
)
_MS = _active_crowd(
    "ms",
    "MS.csv",
    "fb9e0b146723c93dac71d1ed601a736cf94fed3b444f4921d6c4e57b4505c06a",
    title="Music genre",
    summary=(
        "The 'music' crowd labels (700 songs, 44 workers, 2945 labels) with genres coded "
        "1..10, loaded as the genre names of class_names, established by matching the "
        "gold labels with those of the 'music' dataset (1 country, 2 jazz, 3 disco, 4 pop, "
        "5 reggae, 6 rock, 7 blues, 8 classical, 9 metal, 10 hiphop). No features."
    ),
    citation=(
        "Rodrigues, F., Pereira, F. & Ribeiro, B. (2013). Learning from multiple "
        "annotators: distinguishing good from random labelers. Pattern Recognition Letters."
    ),
    n_tasks=700,
    n_workers=44,
    n_annotations=2945,
    n_classes=10,
    class_names=(
        "country",
        "jazz",
        "disco",
        "pop",
        "reggae",
        "rock",
        "blues",
        "classical",
        "metal",
        "hiphop",
    ),
)
_ZENCROWD_ALL = _active_crowd(
    "zencrowd_all",
    "ZenCrowd_all.csv",
    "88dff5161ab4c13951ef7c211745eca8a602884f75be55085aec44beda005ca9",
    title="ZenCrowd entity linking, all workers",
    summary=f"{_ZENCROWD_SUMMARY}, labelled by workers of every country.",
    citation=_ZENCROWD_CITATION,
    n_tasks=2040,
    n_workers=78,
    n_annotations=21855,
    n_classes=2,
)
_ZENCROWD_IN = _active_crowd(
    "zencrowd_in",
    "ZenCrowd_in.csv",
    "c5eabf0b145ce04122a77e28e3d765045ba65c3b16edee2dc0c5106418e92f5a",
    title="ZenCrowd entity linking, workers in India",
    summary=f"{_ZENCROWD_SUMMARY}, labelled by workers in India.",
    citation=_ZENCROWD_CITATION,
    n_tasks=2040,
    n_workers=25,
    n_annotations=11205,
    n_classes=2,
)
_ZENCROWD_US = _active_crowd(
    "zencrowd_us",
    "ZenCrowd_us.csv",
    "e64c95ba430ea42b69a7ffec64b12ed2d844b9403fd053f7a28df2494cfa1b10",
    title="ZenCrowd entity linking, workers in the US",
    summary=f"{_ZENCROWD_SUMMARY}, labelled by workers in the United States.",
    citation=_ZENCROWD_CITATION,
    n_tasks=2040,
    n_workers=74,
    n_annotations=12190,
    n_classes=2,
)

# ---------------------------------------------------------------------- CIFAR-10H

_CIFAR10H = _entry(
    "cifar10h",
    title="CIFAR-10H human label counts (Peterson, Battleday, Griffiths & Russakovsky 2019)",
    summary=(
        "Human classifications of the 10000 CIFAR-10 test images (511000 labels, 47 to 63 "
        "per image), as per-image vote counts: annotators are anonymous (the Global "
        "setting), there is no ground truth and no image here. Task codes follow the "
        "CIFAR-10 test set order."
    ),
    citation=(
        "Peterson, J. C., Battleday, R. M., Griffiths, T. L. & Russakovsky, O. (2019). "
        "Human uncertainty makes classification more robust. ICCV."
    ),
    license="CC BY-NC-SA 4.0 (non-commercial use only, share alike, cite the paper)",
    folder=_Folder(
        "jcpeterson/cifar-10h", "48da312b193b82e6939ec20f23d1f09cbdd849c8", "data", "cifar10h"
    ),
    files={
        "counts": (
            "cifar10h-counts.npy",
            "9b36b4550349af56c79083356312eb4af856cc5fd3caf1f669d40b9d0bbb69ff",
        )
    },
    loader=_loaders.load_cifar10h,
    n_tasks=10000,
    n_workers=None,
    n_annotations=511000,
    n_classes=10,
    class_names=(
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ),
    has_truth=False,
)

# ---------------------------------------------------------------------- USPS

_USPS = _entry(
    "usps",
    title="USPS handwritten digits (features only, for simulated crowds)",
    summary=(
        "16x16 greyscale digit images flattened to 256 pixels in [0, 1] (float32): 7291 "
        "training images (the pool, from which simulated crowds are drawn) and 2007 test "
        "images, classes 0..9. Not a crowd dataset: there are no crowd labels. Read "
        "with h5py (pip install crowdlearn[hdf5])."
    ),
    citation=(
        "Hull, J. J. (1994). A database for handwritten text recognition research. "
        "IEEE Transactions on Pattern Analysis and Machine Intelligence."
    ),
    license="unspecified (no license file in the source repository)",
    folder=_Folder(
        "niuers/Learning-From-Data-A-Short-Course",
        "879a698b960e5867f7c2b11f8938fa89c3d21839",
        "data",
        "usps",
    ),
    files={
        "data": ("usps.h5", "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36")
    },
    loader=_loaders.load_usps,
    n_tasks=7291,
    n_workers=None,
    n_annotations=None,
    n_classes=10,
    has_features=True,
    has_test=True,
)

#: Every registered dataset by name.
REGISTRY: Mapping[str, Entry] = MappingProxyType(
    {
        entry.info.name: entry
        for entry in (
            _LABELME,
            _MUSIC,
            _BLUEBIRDS,
            _RTE,
            _TEMP,
            _WSD,
            _CF,
            _CF_AMT,
            _MS,
            _ZENCROWD_ALL,
            _ZENCROWD_IN,
            _ZENCROWD_US,
            _CIFAR10H,
            _USPS,
        )
    }
)
