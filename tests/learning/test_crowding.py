"""CrowdInG: its losses, LCA matrix, selection, two-step split and a short training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.learning.crowding import (
    VARIANTS,
    CrowdInG,
    crm_loss,
    entropy_split,
    lca_matrix,
    normalised_entropy,
    select_generated,
    share_split,
)
from crowdlearn.simulate import crowd_on_features

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.8).astype(int)
    data = crowd_on_features(X, y, n_workers=8, labels_per_task=2, seed=3)
    return data, X, y


def test_crm_losses_match_a_hand_computation():
    delta = torch.tensor([0.5, -1.0, 2.0])
    logged = torch.tensor([0.5, 0.25, 0.8])
    current = torch.tensor([0.4, 0.5, 0.2], requires_grad=True)
    mu = 0.3
    loss = crm_loss(delta, mu, current, logged)
    hand = ((0.5 - 0.3) * 0.4 / 0.5 + (-1.0 - 0.3) * 0.5 / 0.25 + (2.0 - 0.3) * 0.2 / 0.8) / 3
    assert float(loss.detach()) == pytest.approx(hand)
    loss.backward()
    # d loss / d current_i = (delta_i - mu) / (n * logged_i); delta and logged get none
    expected = np.array([0.2 / 0.5, -1.3 / 0.25, 1.7 / 0.8]) / 3
    assert np.allclose(current.grad.numpy(), expected)


def test_eq5_and_eq6_on_a_toy_batch(crowd):
    """The generator's (eq. 5) and the classifier's (eq. 6) losses of the learner on a
    logged batch equal the formula computed by hand from D, Q, G and G_0."""
    data, X, _y = crowd
    model = CrowdInG(max_epochs=1, gan_epochs=1, updates_per_epoch=1, gan_pretrain_epochs=1,
                     lam=0.7, mu=0.2, dropout=0.0).fit(data)  # fmt: skip
    from crowdlearn.learning.crowding import _pairs_of, _State

    module, r = model.module_, data.n_workers
    x = torch.as_tensor(X)
    state = _State(data, x, x, np.zeros(data.n_tasks * r, bool), np.ones(r, int), "cpu")
    logged = model._log(module, state, np.random.default_rng(0))
    pairs = _pairs_of(np.array([0, 1]), r, "cpu")
    local = torch.arange(2).repeat_interleave(r)
    lg, delta = model._deltas(module, state, logged, pairs, x[:2], local)
    task, worker, lab = pairs // r, pairs % r, logged.label[pairs]
    disc, gen = module["discriminator"], module["generator"]
    with torch.no_grad():
        d = torch.sigmoid(disc.scores(x[task], worker))[torch.arange(len(pairs)), lab]
        q = torch.softmax(disc.q_logits(x[task], worker, lab), dim=1)
        info = (logged.zhat[task] * torch.log(q)).sum(dim=1)
        g = torch.softmax(gen(x[task], worker, logged.eps[pairs], logged.zhat[task]), dim=1)
        g_y = g[torch.arange(len(pairs)), lab]
        zc = torch.softmax(module["classifier"](x[:2]), dim=1)[task]
        gc = torch.softmax(gen(x[task], worker, logged.eps[pairs], zc), dim=1)
        gc_y = gc[torch.arange(len(pairs)), lab]
    assert torch.allclose(lg, torch.log(1 - d), atol=1e-5)
    assert torch.allclose(delta, torch.log(1 - d) - 0.7 * info, atol=1e-5)
    # at the logging policy itself G = G_0 and eq. 5 is the mean of delta - mu
    g5 = crm_loss(delta, 0.2, g_y, logged.logged[pairs])
    assert float(g5) == pytest.approx(float((delta - 0.2).mean()), abs=1e-5)
    hand6 = float(((torch.log(1 - d) - 0.2) * gc_y / logged.logged[pairs]).mean())
    assert float(crm_loss(lg, 0.2, gc_y, logged.logged[pairs])) == pytest.approx(hand6, 1e-5)


def test_networks_are_the_concatenation_layers_computed_per_task():
    """The generator's first layer is one linear map of [eps, z_hat, x, one_hot(r)]
    (eq. 1) and D's encoders are linear in x and one_hot(r) (eq. 2); computing the
    instance part once per task (``task=``) changes nothing."""
    from crowdlearn.learning.crowding import Discriminator, Generator

    torch.manual_seed(0)
    n_tasks, r, k, noise, d = 5, 4, 3, 2, 6
    gen = Generator(d, r, k, noise, 7, True, True)
    disc = Discriminator(d, r, k, 4, 8, True)
    x = torch.randn(n_tasks, d)
    task = torch.tensor([0, 0, 1, 3, 4, 4, 2])
    worker = torch.tensor([0, 1, 3, 2, 0, 3, 1])
    eps, zhat = torch.randn(len(task), noise), torch.softmax(torch.randn(len(task), k), 1)
    one_hot = torch.nn.functional.one_hot(worker, r).float()
    with torch.no_grad():
        weight = torch.cat([gen.rest_in.weight, gen.x_in.weight, gen.worker_in.t()], dim=1)
        hidden = torch.cat([eps, zhat, x[task], one_hot], dim=1) @ weight.t() + gen.rest_in.bias
        by_hand = gen.out(hidden)
        assert torch.allclose(gen(x[task], worker, eps, zhat), by_hand, atol=1e-6)
        assert torch.allclose(gen(x, worker, eps, zhat, task=task), by_hand, atol=1e-6)
        u, v = disc.encode(x, worker, task)
        assert torch.allclose(u, disc.encode_worker(one_hot), atol=1e-6)
        assert torch.allclose(v, disc.encode_x(x[task]), atol=1e-6)
        assert torch.allclose(disc.scores(x, worker, task), disc.scores(x[task], worker))
        label = torch.tensor([0, 2, 1, 1, 0, 2, 2])
        assert torch.allclose(
            disc.q_logits(x, worker, label, task), disc.q_logits(x[task], worker, label)
        )
    # the split first layer keeps the fan-in of the whole concatenation at initialisation
    bound = 1 / np.sqrt(noise + k + d + r)
    for part in (gen.rest_in.weight, gen.x_in.weight, gen.worker_in):
        assert float(part.detach().abs().max()) <= bound
    # without instance / annotator features the generator ignores them
    blind = Generator(d, r, k, noise, 7, False, False)
    with torch.no_grad():
        a = blind(x[task], worker, eps, zhat)
        b = blind(torch.randn_like(x[task]), (worker + 1) % r, eps, zhat)
    assert torch.allclose(a, b)


def test_lca_matrix_is_symmetric_normalised():
    task = [0, 0, 0, 1, 1, 2, 2, 3]
    worker = [0, 1, 2, 0, 1, 1, 2, 0]
    label = [0, 1, 1, 2, 0, 1, 1, 2]
    m = lca_matrix(task, worker, label, 4)
    assert np.allclose(m, m.T)
    # rebuild D^-1/2 (A + I) D^-1/2 by hand
    counts = np.zeros((4, 4))
    counts[0, 1] = counts[1, 0] = 2  # task 0: (0,1) twice
    counts[0, 2] = counts[2, 0] = 1  # task 1
    n = np.array([2, 4, 2, 0], float)
    a = np.zeros((4, 4))
    for i, j in [(0, 1), (1, 0), (0, 2), (2, 0)]:
        a[i, j] = counts[i, j] / np.sqrt(n[i] * n[j])
    a += np.eye(4)
    d = a.sum(axis=1)
    assert np.allclose(m, a / np.sqrt(np.outer(d, d)))
    assert np.isclose(np.abs(np.linalg.eigvalsh(m)).max(), 1.0)
    assert m[3, 3] == 1.0 and m[3, :3].sum() == 0  # an unseen class is isolated


def test_selection_draws_the_requested_counts_per_annotator():
    rng = np.random.default_rng(0)
    pair_worker = np.repeat(np.arange(4), [50, 30, 5, 0])
    entropy = rng.uniform(0.01, 2.0, size=len(pair_worker))
    counts = np.array([10, 30, 8, 3])
    for rule in ("entropy", "random"):
        picked = select_generated(pair_worker, entropy, counts, rng, rule)
        assert len(np.unique(picked)) == len(picked)
        assert np.bincount(pair_worker[picked], minlength=4).tolist() == [10, 30, 5, 0]
    # entropy rule favours confident (low-entropy) generations
    entropy = np.where(np.arange(50) < 25, 0.01, 2.0)
    low = [
        np.mean(select_generated(np.zeros(50, int), entropy, np.array([10]), rng) < 25)
        for _ in range(30)
    ]
    assert np.mean(low) > 0.9


def test_two_step_split_follows_t():
    proba = np.array([[1.0, 0.0, 0.0], [0.8, 0.1, 0.1], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0]])
    h = normalised_entropy(proba)
    assert h[0] == pytest.approx(0, abs=1e-9) and h[2] == pytest.approx(1)
    assert entropy_split(proba, 0.2).tolist() == [True, False, False, False]
    assert entropy_split(proba, 0.7).tolist() == [True, True, False, True]
    assert entropy_split(proba, 1.01).all()


def test_history_counts_low_entropy_tasks(crowd):
    data, _X, _y = crowd
    model = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1, t=1.0).fit(data, valid=None)
    assert model.history_["n_low"].iloc[1] == data.n_tasks
    model = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1, t=0.0).fit(data, valid=None)
    assert model.history_["n_low"].iloc[1] == 0


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_train_without_nan(crowd, variant):
    data, X, y = crowd
    # the largest learning rate of the paper's grid: the most likely to diverge
    model = CrowdInG(max_epochs=3, gan_epochs=3, updates_per_epoch=2, gan_pretrain_epochs=2,
                     gan_lr=3e-4, **VARIANTS[variant]).fit(data, (X, y))  # fmt: skip
    history = model.history_
    columns = ["d_loss", "g_loss", "c_loss", "info_loss", "valid_accuracy"]
    assert list(history["epoch"]) == [0, 1, 2, 3]
    assert np.isfinite(history.loc[1:, columns].to_numpy(dtype=float)).all()
    for name in model.module_.state_dict():
        assert torch.isfinite(model.module_.state_dict()[name]).all()
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), data.n_classes) and np.allclose(proba.sum(axis=1), 1)
    # the kept classifier is the best validation epoch
    assert (
        history["valid_accuracy"].iloc[model.best_epoch_] == history["valid_accuracy"].max()
        or variant == "DL-CL+InG"
    )


def test_expanded_annotations_fill_every_pair(crowd, tmp_path):
    data, X, _y = crowd
    model = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1).fit(data)
    expanded = model.expanded_annotations(data, "all")
    assert expanded.n_annotations == data.n_tasks * data.n_workers
    pairs = expanded.task.astype(np.int64) * data.n_workers + expanded.worker
    assert len(np.unique(pairs)) == len(pairs)
    assert (expanded.label[: data.n_annotations] == data.label).all()
    model.save(tmp_path / "m.pt")
    loaded = CrowdInG.load(tmp_path / "m.pt")
    assert np.allclose(loaded.predict_proba(X), model.predict_proba(X))
    assert np.allclose(loaded.lca_, model.lca_)


def test_selected_expansion_adds_as_many_as_observed_per_annotator(crowd):
    data, _X, _y = crowd
    sparse = data.subsample(0.3, seed=1, keep_one_per_task=True)
    model = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1).fit(sparse)
    assert model.expand == "selected"
    expanded = model.expanded_annotations(sparse)
    r = sparse.n_workers
    observed = np.bincount(sparse.worker, minlength=r)
    missing = sparse.n_tasks - observed
    added = np.bincount(expanded.worker[sparse.n_annotations :], minlength=r)
    assert (added == np.minimum(observed, missing)).all() and added.sum() > 0
    pairs = expanded.task.astype(np.int64) * r + expanded.worker
    assert len(np.unique(pairs)) == len(pairs)  # only missing pairs are added
    # the generated labels agree with the full expansion on the same pairs
    full = model.expanded_annotations(sparse, "all")
    full_label = dict(zip(full.task.astype(np.int64) * r + full.worker, full.label, strict=True))
    assert all(full_label[q] == lab for q, lab in zip(pairs, expanded.label, strict=True))
    again = model.expanded_annotations(sparse)
    assert (again.task == expanded.task).all() and (again.worker == expanded.worker).all()
    with pytest.raises(ValueError, match="expand"):
        model.expanded_annotations(sparse, "some")


def test_same_seed_same_model(crowd):
    data, X, _y = crowd
    a = CrowdInG(max_epochs=2, gan_epochs=2, updates_per_epoch=1).fit(data)
    b = CrowdInG(max_epochs=2, gan_epochs=2, updates_per_epoch=1).fit(data)
    assert np.allclose(a.predict_proba(X), b.predict_proba(X))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 60),
    k=st.integers(2, 6),
    share=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
    ties=st.booleans(),
)
def test_share_split_hits_the_requested_share(n, k, share, seed, ties):
    """The t-from-share rule: exactly round(share * n) tasks update the classifier,
    they are the most uncertain ones, and the threshold it returns separates them."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(k), size=n)
    if ties:  # many identical rows: the share must still be met exactly
        proba[: n // 2] = proba[0]
    low, t = share_split(proba, share)
    high = ~low
    assert high.sum() == round(share * n)
    h = normalised_entropy(proba)
    if high.any() and low.any():
        assert h[high].min() >= h[low].max()
        assert t == pytest.approx(h[high].min())
        # every classifier task is at or above t
        assert (h[high] >= t).all()
    if not high.any():
        assert t == 1.0


def test_share_split_rejects_a_share_outside_0_1():
    with pytest.raises(ValueError, match="crm_share"):
        share_split(np.full((3, 2), 0.5), 1.5)


def test_history_records_the_share_below_t(crowd):
    """share_low = n_low / n_tasks, n_low + n_classifier = n_tasks, and the split is
    that of entropy_split at t on the classifier of the epoch's start."""
    data, _X, _y = crowd
    model = CrowdInG(max_epochs=2, gan_epochs=3, updates_per_epoch=1, t=0.5).fit(data, valid=None)
    gan = model.history_.iloc[1:]
    assert (gan["n_low"] + gan["n_classifier"] == data.n_tasks).all()
    assert np.allclose(gan["share_low"], gan["n_low"] / data.n_tasks)
    assert (gan["t_used"] == 0.5).all()
    assert model.history_.loc[0, ["n_low", "share_low"]].isna().all()
    # the extremes: all tasks below t=1.0, none below t=0
    one = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1, t=1.0).fit(data, valid=None)
    assert one.history_["share_low"].iloc[1] == 1.0
    zero = CrowdInG(max_epochs=2, gan_epochs=1, updates_per_epoch=1, t=0.0).fit(data, valid=None)
    assert zero.history_["share_low"].iloc[1] == 0.0


def test_crm_share_sets_the_classifier_share_every_epoch(crowd):
    data, _X, _y = crowd
    model = CrowdInG(max_epochs=2, gan_epochs=3, updates_per_epoch=1, crm_share=0.25).fit(
        data, valid=None
    )
    gan = model.history_.iloc[1:]
    assert (gan["n_classifier"] == round(0.25 * data.n_tasks)).all()
    assert np.allclose(gan["share_low"], 1 - round(0.25 * data.n_tasks) / data.n_tasks)
    assert gan["t_used"].between(0, 1).all()
    with pytest.raises(ValueError, match="crm_share"):
        CrowdInG(max_epochs=1, gan_epochs=1, crm_share=0.0).fit(data, valid=None)


def test_select_from_gan_never_keeps_epoch_0(crowd):
    """On this toy, at the paper's largest rate, validation accuracy falls after the
    pre-training: the default keeps epoch 0 (DL-CL), select_from_gan the best of 1..3."""
    data, X, y = crowd
    params = dict(max_epochs=3, gan_epochs=3, updates_per_epoch=1, gan_lr=3e-4)
    default = CrowdInG(**params).fit(data, (X, y))
    accuracy = default.history_["valid_accuracy"]
    assert accuracy.iloc[0] > accuracy.iloc[1:].max()  # the case the option is for
    assert default.best_epoch_ == 0
    chosen = CrowdInG(**params, select_from_gan=True).fit(data, (X, y))
    # same seed, same training: only the choice differs
    assert np.allclose(chosen.history_["valid_accuracy"], accuracy)
    assert chosen.best_epoch_ >= 1
    assert accuracy.iloc[chosen.best_epoch_] == accuracy.iloc[1:].max()
    with pytest.raises(ValueError, match="select_from_gan"):
        CrowdInG(max_epochs=1, gan_epochs=0, select_from_gan=True).fit(data, (X, y))


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 1000))
def test_select_from_gan_kept_epoch_is_a_gan_epoch(crowd, seed):
    data, X, y = crowd
    model = CrowdInG(max_epochs=1, gan_epochs=2, updates_per_epoch=1, gan_pretrain_epochs=1,
                     select_from_gan=True, random_state=seed).fit(data, (X, y))  # fmt: skip
    assert model.best_epoch_ in (1, 2)
    accuracy = model.history_["valid_accuracy"]
    assert accuracy.iloc[model.best_epoch_] == accuracy.iloc[1:].max()


def test_batch_norm_classifier_builds_and_trains(crowd):
    data, X, y = crowd
    model = CrowdInG(max_epochs=2, gan_epochs=2, updates_per_epoch=2, gan_pretrain_epochs=1,
                     batch_norm=True, gan_lr=3e-4, crm_share=0.3).fit(data, (X, y))  # fmt: skip
    norms = [
        m for m in model.module_["classifier"].modules() if isinstance(m, torch.nn.BatchNorm1d)
    ]
    assert len(norms) == 1
    # the CrowdInG stage moved the batch-norm statistics and weights
    assert int(norms[0].num_batches_tracked) > 0
    assert np.isfinite(model.history_.loc[1:, ["c_loss", "g_loss"]].to_numpy(float)).all()
    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1)
    plain = CrowdInG(max_epochs=1, gan_epochs=1, updates_per_epoch=1).fit(data, valid=None)
    assert not any(
        isinstance(m, torch.nn.BatchNorm1d) for m in plain.module_["classifier"].modules()
    )


def test_batch_norm_survives_a_classifier_batch_of_one_task(crowd):
    """65 classifier tasks in batches of 64 leave one task over: it is merged, not fed
    alone to batch norm (which cannot train on one row)."""
    data, _X, _y = crowd
    share = 65 / data.n_tasks
    model = CrowdInG(max_epochs=1, gan_epochs=1, updates_per_epoch=1, gan_pretrain_epochs=1,
                     batch_norm=True, crm_share=share, batch_size=64)  # fmt: skip
    model.fit(data, valid=None)
    assert model.history_["n_classifier"].iloc[1] == 65
    assert np.isfinite(model.history_["c_loss"].iloc[1])
    from crowdlearn.learning.crowding import _chunks

    chunks = _chunks(np.arange(65), 64, min_last=2)
    assert [len(c) for c in chunks] == [65]
    assert [len(c) for c in _chunks(np.arange(65), 64)] == [64, 1]


def test_shuffled_signal_changes_only_the_classifier_update(crowd):
    """The control permutes log(1 - D) across a batch's pairs in eq. 6: with every
    task updating the generator (t=1: no classifier update) it is a no-op; with
    classifier updates it changes the classifier."""
    data, X, _y = crowd
    params = dict(max_epochs=2, gan_epochs=2, updates_per_epoch=1, gan_lr=3e-4)
    a = CrowdInG(**params, t=1.0).fit(data, valid=None)
    b = CrowdInG(**params, t=1.0, shuffle_signal=True).fit(data, valid=None)
    assert np.allclose(a.predict_proba(X), b.predict_proba(X))
    c = CrowdInG(**params, crm_share=1.0).fit(data, valid=None)
    d = CrowdInG(**params, crm_share=1.0, shuffle_signal=True).fit(data, valid=None)
    assert not np.allclose(c.predict_proba(X), d.predict_proba(X))
    assert np.isfinite(d.history_["c_loss"].iloc[1:]).all()


@pytest.mark.parametrize("lca", [True, False])
def test_scores_and_q_share_one_encoding_and_equal_the_two_calls(lca):
    from crowdlearn.learning.crowding import Discriminator

    torch.manual_seed(0)
    n, d, r, k = 12, 5, 4, 3
    disc = Discriminator(d, r, k, 4, 8, lca)
    x = torch.randn(3, d)
    task = torch.randint(0, 3, (n,))
    worker = torch.randint(0, r, (n,))
    label = torch.randint(0, k, (n,))
    rows = torch.arange(n) % 2 == 0
    scores, q = disc.scores_and_q(x, worker, label, rows=rows, task=task)
    torch.testing.assert_close(scores, disc.scores(x, worker, task))
    torch.testing.assert_close(q, disc.q_logits(x[task[rows]], worker[rows], label[rows]))
    only, none = disc.scores_and_q(x, worker, task=task)
    assert none is None
    torch.testing.assert_close(only, scores)
    # the gradient of a loss on both reaches the encoders once per use, as two calls do
    (scores.sum() + q.sum()).backward()
    shared = disc.encode_x.weight.grad.clone()
    disc.zero_grad()
    (
        disc.scores(x, worker, task).sum()
        + disc.q_logits(x[task[rows]], worker[rows], label[rows]).sum()
    ).backward()
    torch.testing.assert_close(shared, disc.encode_x.weight.grad)


def test_default_gan_epochs_is_ten_and_the_paper_bench_keeps_forty():
    from benchmarks.crowding.benchmark import PAPER_GAN

    assert CrowdInG().gan_epochs == 10
    assert PAPER_GAN["gan_epochs"] == 40
