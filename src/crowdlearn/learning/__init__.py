"""Learning from crowds: classifiers trained directly on crowd annotations.

A learner is a backbone (any ``torch.nn.Module`` mapping inputs to K logits; an MLP by
default), an optional noise model of the crowd, and a recipe; one shared trainer runs
every method (mini-batches of tasks with their annotations, optimiser, validation-based
model selection, early stopping, seeding, checkpoints). Every learner follows the
scikit-learn contract: ``fit(data, valid=None)``, ``predict_proba(X)``, ``predict(X)``,
``history_``, and ``save``/``load`` (:func:`load_model` and :func:`model_info` read a
saved model and its metadata; model files hold data only, so reading one runs no code
from it). Raw texts and image files are trained on through
a featuriser (:mod:`crowdlearn.learning.featurizers`, :func:`fit_on_items`).
"""

from crowdlearn.aggregation import (
    GLAD,
    DawidSkene,
    MajorityVote,
    NaiveSoft,
    make_aggregator,
)
from crowdlearn.learning._base import TRAINING_PARAMS, BaseLearner
from crowdlearn.learning._registry import LEARNERS, make_learner, register_learner
from crowdlearn.learning.annot_mix import AnnotMix
from crowdlearn.learning.backbones import MLP, SmallCNN, build_backbone
from crowdlearn.learning.cmm import CrowdMixture
from crowdlearn.learning.conal import CoNAL
from crowdlearn.learning.crowd_layer import CrowdLayer
from crowdlearn.learning.crowd_layer_self import CrowdLayerSelf
from crowdlearn.learning.crowding import CrowdInG
from crowdlearn.learning.dl_em import DLEM
from crowdlearn.learning.doctor_net import DoctorNet
from crowdlearn.learning.doctor_net_weighted import DoctorNetWeighted
from crowdlearn.learning.ensemble import Ensemble, member_specs
from crowdlearn.learning.featurizers import (
    ImageFeaturizer,
    SentenceTransformerFeaturizer,
    TextFeaturizer,
    fit_on_items,
)
from crowdlearn.learning.geocrowdnet import GeoCrowdNet
from crowdlearn.learning.iced import ICED
from crowdlearn.learning.madl import MaDL
from crowdlearn.learning.max_mig import MaxMIG
from crowdlearn.learning.persistence import MODEL_FORMAT, ModelFileError, load_model, model_info
from crowdlearn.learning.search import SearchResult, search
from crowdlearn.learning.self_crowd import SelfCrowd
from crowdlearn.learning.trace_reg import TraceReg
from crowdlearn.learning.two_stage import Supervised, TwoStage
from crowdlearn.learning.union_net import UnionNet

register_learner("supervised", Supervised, "train on the ground truth (upper bound)")
register_learner(
    "twostage",
    TwoStage,
    "aggregate with any strategy, then train on its labels (twostage[aggregator=ds])",
    converters={"aggregator": make_aggregator},
)
register_learner(
    "mv+nn", TwoStage, "majority-vote labels, then a network", aggregator=MajorityVote()
)
register_learner(
    "naivesoft+nn",
    TwoStage,
    "vote frequencies as soft labels, then a network",
    aggregator=NaiveSoft(),
    soft=True,
)
register_learner(
    "ds+nn",
    TwoStage,
    "Dawid-Skene posteriors as soft labels, then a network",
    aggregator=DawidSkene(),
    soft=True,
)
register_learner(
    "glad+nn",
    TwoStage,
    "GLAD posteriors as soft labels, then a network",
    aggregator=GLAD(),
    soft=True,
)
register_learner(
    "crowdlayer", CrowdLayer, "Crowd Layer (Rodrigues & Pereira 2018), variants MW/VW/VB/VW+B/SW"
)
register_learner("conal", CoNAL, "CoNAL (Chu et al. 2021): common and individual confusions")
register_learner("dl-em", DLEM, "DL-EM (Raykar et al. 2010): EM with the network as class prior")
register_learner(
    "cmm",
    CrowdMixture,
    "Crowd Mixture Model (CMM): M groups of confusions, individual or global setting",
)
register_learner(
    "crowding",
    CrowdInG,
    "CrowdInG (Chu & Wang 2021): GAN annotation augmentation with mutual information and CRM",
)
register_learner(
    "doctornet", DoctorNet, "Doctor Net (Guan et al. 2018): one head per annotator, weighted vote"
)
register_learner(
    "dl-cl+self",
    CrowdLayerSelf,
    "DL-CL+Self: fill every missing annotation with a pre-trained Crowd Layer, retrain",
)
register_learner(
    "iced",
    ICED,
    "ICED (Wang et al.): certainty warm-up, Dawid-Skene and synthetic minority samples",
    converters={"aggregator": make_aggregator},
)
register_learner(
    "self-crowd",
    SelfCrowd,
    "Self-Crowd (Shi et al.): Crowd Layer self-training with class-balanced pseudo-annotations",
)
register_learner(
    "geocrowdnet",
    GeoCrowdNet,
    "GeoCrowdNet (Ibrahim et al. 2023): coupled cross-entropy, log-det regulariser F or W",
)
register_learner(
    "geocrowdnet-f", GeoCrowdNet, "GeoCrowdNet (F): -log det(F^T F) on the outputs", penalty="F"
)
register_learner(
    "geocrowdnet-w", GeoCrowdNet, "GeoCrowdNet (W): -log det(W^T W) on the confusions", penalty="W"
)
register_learner(
    "trace-reg", TraceReg, "Trace regularisation (Tanno et al. 2019): confusions + lam trace"
)
register_learner(
    "union-net", UnionNet, "Union-Net (Wei et al. 2022): annotators' labels as one union target"
)
register_learner(
    "annot-mix",
    AnnotMix,
    "annot-mix (Herde et al. 2024): mixup of instances and (annotator, label) pairs",
)
register_learner(
    "madl", MaDL, "MaDL (Herde et al. 2023): instance-dependent confusions, annotator kernel"
)
register_learner(
    "max-mig", MaxMIG, "Max-MIG (Cao et al. 2019): classifier and crowd aggregator, f-MIG (KL)"
)
register_learner(
    "doctornet-w",
    DoctorNetWeighted,
    "Weighted Doctor Net (Guan et al. 2018): heads averaged with learned weights (WDN)",
)
register_learner(
    "ensemble",
    Ensemble,
    "mean probabilities of several learners (ensemble[members=dl-em/max-mig,n_seeds=2])",
    converters={"members": member_specs},
)

__all__ = [
    "DLEM",
    "ICED",
    "LEARNERS",
    "MLP",
    "MODEL_FORMAT",
    "TRAINING_PARAMS",
    "AnnotMix",
    "BaseLearner",
    "CoNAL",
    "CrowdInG",
    "CrowdLayer",
    "CrowdLayerSelf",
    "CrowdMixture",
    "DoctorNet",
    "DoctorNetWeighted",
    "Ensemble",
    "GeoCrowdNet",
    "ImageFeaturizer",
    "MaDL",
    "MaxMIG",
    "ModelFileError",
    "SearchResult",
    "SelfCrowd",
    "SentenceTransformerFeaturizer",
    "SmallCNN",
    "Supervised",
    "TextFeaturizer",
    "TraceReg",
    "TwoStage",
    "UnionNet",
    "build_backbone",
    "fit_on_items",
    "load_model",
    "make_learner",
    "model_info",
    "register_learner",
    "search",
]
