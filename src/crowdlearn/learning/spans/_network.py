"""The tagger network: a character-aware BiLSTM with a linear-chain CRF on top.

* :class:`Vocabulary`: the words (lower-cased, digits read as ``0``) and the characters
  of the training tokens, coded from 2 (0 pads, 1 is an unknown word or character). It
  is saved in the model file as two lists of strings.
* :class:`TaggerNet`: per token, a learned word embedding and a character CNN (max
  over the token's characters, which keep their case), a bidirectional LSTM over the
  sequence, and a linear layer giving each token one score per tag (the *emissions*).
* :class:`CRF`: tag-to-tag transition scores, start and end scores; its negative
  log-likelihood takes target *distributions* per token (one-hot for hard tags), so
  that one function trains on hard tags, soft tags (the expected negative
  log-likelihood under independent token distributions) and each worker's tags; Viterbi
  decoding keeps to valid BIO sequences.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

#: Codes of the padding and of unknown words and characters.
PAD, UNK = 0, 1
#: A token's characters read by the character CNN (longer tokens are cut).
MAX_CHARS = 20

_DIGITS = re.compile(r"\d")


def word_form(token: str) -> str:
    """The form a token is looked up by: lower case, every digit ``0``."""
    return _DIGITS.sub("0", token.lower())


class Vocabulary:
    """Word and character codes of the training tokens.

    Parameters
    ----------
    words, chars : sequence of str
        The known word forms (:func:`word_form`) and characters, coded from 2 in this
        order.
    counts : sequence of int, optional
        How often each word occurs in the training tokens (word dropout replaces words
        seen once by the unknown word).
    """

    def __init__(
        self,
        words: Sequence[str],
        chars: Sequence[str],
        counts: Sequence[int] | None = None,
    ) -> None:
        self.words = list(words)
        self.chars = list(chars)
        self._word_code = {w: i + 2 for i, w in enumerate(self.words)}
        self._char_code = {c: i + 2 for i, c in enumerate(self.chars)}
        self.counts = np.ones(len(self.words) + 2, dtype=np.int64)
        if counts is not None:
            self.counts[2:] = np.asarray(counts, dtype=np.int64)

    @classmethod
    def of(cls, sequences: Sequence[Sequence[str]]) -> Vocabulary:
        """The vocabulary of some token sequences (words by first occurrence)."""
        words: Counter[str] = Counter()
        chars: dict[str, None] = {}
        for tokens in sequences:
            for token in tokens:
                words[word_form(token)] += 1
                for char in token[:MAX_CHARS]:
                    chars.setdefault(char, None)
        return cls(list(words), list(chars), list(words.values()))

    @property
    def n_words(self) -> int:
        """Word codes, the padding and the unknown word included."""
        return len(self.words) + 2

    @property
    def n_chars(self) -> int:
        """Character codes, the padding and the unknown character included."""
        return len(self.chars) + 2

    def encode(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word codes ``(n,)`` and character codes ``(n, MAX_CHARS)`` of one sequence
        (an empty token is one unknown character)."""
        words = np.array([self._word_code.get(word_form(t), UNK) for t in tokens], np.int64)
        chars = np.zeros((len(tokens), MAX_CHARS), dtype=np.int64)
        for i, token in enumerate(tokens):
            codes = [self._char_code.get(c, UNK) for c in token[:MAX_CHARS]] or [UNK]
            chars[i, : len(codes)] = codes
        return words, chars


class TaggerNet(nn.Module):
    """Word embedding + character CNN -> BiLSTM -> one score per tag and token.

    Parameters
    ----------
    n_words, n_chars, n_tags : int
    word_dim : int
        Size of the word embedding.
    char_dim, char_filters : int
        Size of the character embedding and number of CNN filters (width 3).
    hidden : int
        LSTM units per direction.
    dropout : float
        Dropout on the LSTM's input and output.
    """

    def __init__(
        self,
        n_words: int,
        n_chars: int,
        n_tags: int,
        word_dim: int = 64,
        char_dim: int = 24,
        char_filters: int = 48,
        hidden: int = 96,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.words = nn.Embedding(n_words, word_dim, padding_idx=PAD)
        self.chars = nn.Embedding(n_chars, char_dim, padding_idx=PAD)
        self.char_cnn = nn.Conv1d(char_dim, char_filters, kernel_size=3, padding=1)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(word_dim + char_filters, hidden, batch_first=True, bidirectional=True)
        self.emit = nn.Linear(2 * hidden, n_tags)
        self.hidden_size = 2 * hidden

    def features(
        self, words: torch.Tensor, chars: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        """(B, T, 2 * hidden) BiLSTM states of padded sequences."""
        b, t, c = chars.shape
        char_vectors = self.chars(chars.reshape(b * t, c)).transpose(1, 2)  # (BT, dim, C)
        pooled = torch.relu(self.char_cnn(char_vectors))
        pooled = pooled.masked_fill((chars.reshape(b * t, 1, c) == PAD), -1e4).amax(dim=2)
        pooled = torch.where(pooled < -1e3, torch.zeros_like(pooled), pooled).reshape(b, t, -1)
        inputs = self.dropout(torch.cat([self.words(words), pooled], dim=2))
        packed = pack_padded_sequence(
            inputs, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = self.lstm(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=t)
        return self.dropout(states)

    def forward(
        self, words: torch.Tensor, chars: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Emissions (B, T, n_tags) and BiLSTM states (B, T, 2 * hidden)."""
        states = self.features(words, chars, lengths)
        return self.emit(states), states


def bio_allowed(tag_names: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Which transitions (K, K) and which first tags (K,) a valid BIO sequence has:
    ``I-X`` only after ``B-X`` or ``I-X``."""
    k = len(tag_names)
    transitions = torch.ones(k, k, dtype=torch.bool)
    start = torch.ones(k, dtype=torch.bool)
    for j, name in enumerate(tag_names):
        if name.startswith("I-"):
            start[j] = False
            label = name[2:]
            for i, before in enumerate(tag_names):
                transitions[i, j] = before in (f"B-{label}", f"I-{label}")
    return transitions, start


class CRF(nn.Module):
    """A linear-chain CRF over ``n_tags`` tags (batch first, masks left-aligned).

    ``nll(emissions, targets, mask)`` is the negative log-likelihood of target
    distributions ``q`` (B, T, K): ``log Z - E_q[score(y)]``, where the expectation
    treats the tokens' distributions as independent (exact for one-hot targets).
    """

    def __init__(self, tag_names: Sequence[str]) -> None:
        super().__init__()
        k = len(tag_names)
        self.transitions = nn.Parameter(torch.zeros(k, k))
        self.start = nn.Parameter(torch.zeros(k))
        self.end = nn.Parameter(torch.zeros(k))
        allowed, first = bio_allowed(tag_names)
        self.register_buffer("allowed", allowed, persistent=False)
        self.register_buffer("first", first, persistent=False)

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) ``log Z`` of each sequence."""
        alpha = self.start + emissions[:, 0]
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(
                alpha.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1), dim=1
            )
            alpha = torch.where(mask[:, t : t + 1], step, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    def expected_score(
        self, emissions: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """(B,) the score of the target distributions (token-independent expectation)."""
        m = mask.to(emissions.dtype)
        score = (targets * emissions).sum(dim=2).mul(m).sum(dim=1)
        score = score + targets[:, 0] @ self.start
        pairs = torch.einsum("bti,ij,btj->bt", targets[:, :-1], self.transitions, targets[:, 1:])
        score = score + (pairs * m[:, 1:]).sum(dim=1)
        last = mask.sum(dim=1).clamp(min=1) - 1
        final = targets[torch.arange(len(targets), device=targets.device), last]
        return score + final @ self.end

    def nll(
        self, emissions: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """(B,) negative log-likelihood of the target distributions."""
        return self.log_partition(emissions, mask) - self.expected_score(emissions, targets, mask)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """The best valid BIO tag sequence of each (Viterbi)."""
        forbidden = torch.tensor(-1e4, dtype=emissions.dtype, device=emissions.device)
        transitions = torch.where(self.allowed, self.transitions, forbidden)
        start = torch.where(self.first, self.start, forbidden)
        score = start + emissions[:, 0]
        back = []
        for t in range(1, emissions.shape[1]):
            total = score.unsqueeze(2) + transitions
            best, index = total.max(dim=1)
            back.append(index)
            score = torch.where(mask[:, t : t + 1], best + emissions[:, t], score)
        score = score + self.end
        lengths = mask.sum(dim=1).tolist()
        out = []
        for b, length in enumerate(lengths):
            tag = int(score[b].argmax())
            path = [tag]
            for t in range(length - 1, 0, -1):
                tag = int(back[t - 1][b, tag])
                path.append(tag)
            out.append(path[::-1])
        return out
