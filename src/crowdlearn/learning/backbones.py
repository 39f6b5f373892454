"""Backbones: networks mapping task inputs to K class logits.

Every learner trains a backbone through the same trainer; the default is an MLP (the
Crowd Layer and CMM papers' "128 hidden units, ReLU, dropout 0.5" on features), a
small CNN serves image tensors, and any ``torch.nn.Module`` mapping a batch of inputs
to ``(batch, K)`` logits can be passed instead.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from crowdlearn.data._memory import check_allocation


class MLP(nn.Module):
    """Multi-layer perceptron: [Linear -> (BatchNorm) -> ReLU -> Dropout] x depth -> Linear.

    Inputs of any shape are flattened.

    Parameters
    ----------
    in_features : int
    n_classes : int
    hidden : sequence of int, default (128,)
        Units of each hidden layer; ``()`` gives a linear (softmax regression) model.
    dropout : float, default 0.5
    batch_norm : bool, default False
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        hidden: Sequence[int] = (128,),
        dropout: float = 0.5,
        batch_norm: bool = False,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for units in hidden:
            layers.append(nn.Linear(width, units))
            if batch_norm:
                layers.append(nn.BatchNorm1d(units))
            layers.append(nn.ReLU())
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = units
        layers.append(nn.Linear(width, n_classes))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class SmallCNN(nn.Module):
    """A small convolutional network for image tensors ``(batch, C, H, W)``.

    ``[Conv3x3 -> (BatchNorm) -> ReLU -> MaxPool2]`` per entry of ``channels``, global
    average pooling, then an MLP head with one hidden layer.

    Parameters
    ----------
    in_channels : int
    n_classes : int
    channels : sequence of int, default (32, 64)
    hidden : int, default 128
    dropout : float, default 0.5
    batch_norm : bool, default False
    """

    def __init__(
        self,
        in_channels: int,
        n_classes: int,
        channels: Sequence[int] = (32, 64),
        hidden: int = 128,
        dropout: float = 0.5,
        batch_norm: bool = False,
    ) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        width = in_channels
        for out in channels:
            blocks.append(nn.Conv2d(width, out, kernel_size=3, padding=1))
            if batch_norm:
                blocks.append(nn.BatchNorm2d(out))
            blocks += [nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True)]
            width = out
        self.features = nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = MLP(width, n_classes, hidden=(hidden,), dropout=dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


BackboneSpec = str | nn.Module | Callable[[tuple[int, ...], int], nn.Module]


def build_backbone(
    spec: BackboneSpec,
    item_shape: tuple[int, ...],
    n_classes: int,
    hidden: Sequence[int] = (128,),
    dropout: float = 0.5,
    batch_norm: bool = False,
) -> nn.Module:
    """The classifier network for inputs of shape ``item_shape``.

    Parameters
    ----------
    spec : "mlp", "cnn", an ``nn.Module`` or a callable
        ``"mlp"`` flattens any input; ``"cnn"`` expects ``(C, H, W)`` items (its hidden
        layer has ``hidden[0]`` units). A module is deep-copied (so repeated fits start
        from the same weights) and must map ``(batch, *item_shape)`` to ``(batch, K)``
        logits; a callable is called as ``spec(item_shape, n_classes)``.
    """
    if isinstance(spec, nn.Module):
        return copy.deepcopy(spec)
    if callable(spec) and not isinstance(spec, str):
        return spec(item_shape, n_classes)
    if spec == "mlp":
        widths = [math.prod(item_shape), *hidden, n_classes]
        weights = sum(a * b + b for a, b in itertools.pairwise(widths))
        # float32 weights, their gradients and two optimiser moments (Adam)
        check_allocation(4 * 4 * weights, f"an MLP with layers {' x '.join(map(str, widths))}")
        return MLP(math.prod(item_shape), n_classes, hidden, dropout, batch_norm)
    if spec == "cnn":
        if len(item_shape) != 3:
            raise ValueError(
                f"the 'cnn' backbone needs image inputs (C, H, W), got items of shape "
                f"{item_shape}; use 'mlp' for feature vectors"
            )
        units = hidden[0] if len(hidden) else 128
        return SmallCNN(
            item_shape[0], n_classes, hidden=units, dropout=dropout, batch_norm=batch_norm
        )
    raise ValueError(f"backbone must be 'mlp', 'cnn', an nn.Module or a callable, got {spec!r}")


def describe_backbone(spec: Any) -> str:
    """A short name of a backbone spec, for histories and saved files."""
    return spec if isinstance(spec, str) else type(spec).__name__
