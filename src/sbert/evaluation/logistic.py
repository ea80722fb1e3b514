"""SentEval's logistic regression classifier, many fits trained at once.

Follows ``senteval/tools/classifier.py`` of facebookresearch/SentEval (``PyTorchClassifier`` and
``MLP`` with ``nhid=0``), with its defaults: one ``nn.Linear`` layer, cross-entropy averaged over
minibatches of 64, Adam (learning rate 0.001) whose ``weight_decay`` is the L2 strength, and early
stopping: every ``epoch_size`` (4) passes over the training rows the validation accuracy is measured,
the best weights are kept, and training stops at the ``tenacity`` + 1-th (6th) check without
improvement or after ``max_epoch`` (200) passes. Each fit starts as SentEval's does, from
``np.random.seed(1111)`` and ``torch.manual_seed(1111)``: the same initial weights, the same
validation split and the same minibatch order.

SentEval trains its hundreds of fits (10 outer folds x 10 inner folds x 4 L2 strengths for MR) one
after another. Here they are stacked: one batched matrix product per minibatch step serves every fit,
and a fit that has stopped drops out. The arithmetic per fit is the same.

Example:
    >>> x = np.array([[0.0, 1.0], [0.2, 0.9], [1.0, 0.0], [0.9, 0.1]] * 20, dtype=np.float32)
    >>> y = np.array([0, 0, 1, 1] * 20)
    >>> fits = [Fit.with_dev(np.arange(0, 60), np.arange(60, 80))]
    >>> models = fit_logistic(x, y, 2, fits, np.array([[1e-5]]), ClassifierSettings(max_epoch=40))
    >>> models.predict(0, 0, x[:4]).tolist()
    [0, 0, 1, 1]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


@dataclass(frozen=True)
class ClassifierSettings:
    """SentEval's classifier settings (``params['classifier']``), its recommended defaults.

    Attributes:
        batch_size: Minibatch size.
        tenacity: Checks without improvement tolerated before stopping (stops at the next one).
        epoch_size: Passes over the training rows between two validation checks.
        max_epoch: Training stops once this many passes are exceeded.
        learning_rate: Adam's learning rate (PyTorch's default, as SentEval's ``"adam"``).
        seed: Seeds the initial weights, the validation split and the minibatch order of every fit.
        threads: PyTorch threads while training (the caller's setting is restored afterwards).
    """

    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200
    learning_rate: float = 1e-3
    seed: int = 1111
    threads: int = 1


@dataclass
class Fit:
    """One fitting job: rows to train on, rows that steer early stopping, and its minibatch order.

    Build it with :meth:`with_dev` (SentEval's ``validation_data``) or :meth:`with_split`
    (``validation_split``).
    """

    train: np.ndarray  # (n_train,) row numbers into the features
    dev: np.ndarray  # (n_dev,)
    rng: np.random.RandomState

    @classmethod
    def with_dev(cls, train: np.ndarray, dev: np.ndarray, seed: int = 1111) -> Fit:
        return cls(np.asarray(train), np.asarray(dev), np.random.RandomState(seed))

    @classmethod
    def with_split(cls, rows: np.ndarray, fraction: float, seed: int = 1111) -> Fit:
        """Hold out the first ``int(fraction * len(rows))`` rows of a seeded permutation, as SentEval."""
        rng = np.random.RandomState(seed)
        rows = np.asarray(rows)
        permutation = rng.permutation(len(rows))
        cut = int(fraction * len(rows))
        return cls(rows[permutation[cut:]], rows[permutation[:cut]], rng)


@dataclass
class FittedModels:
    """The best weights of each (fit, L2 strength) and the validation accuracy they reached.

    ``weight``: (fits, strengths, dim, classes); ``bias``: (fits, strengths, classes);
    ``dev_accuracy``: (fits, strengths), a fraction in [0, 1].
    """

    weight: Tensor
    bias: Tensor
    dev_accuracy: np.ndarray

    def predict(self, fit: int, strength: int, features: np.ndarray) -> np.ndarray:
        """Class index per row of ``features`` (n, dim), by the given model."""
        with torch.no_grad():
            logits = torch.as_tensor(features, dtype=torch.float32) @ self.weight[fit, strength]
            return (logits + self.bias[fit, strength]).argmax(dim=1).numpy()

    def accuracy(self, fit: int, strength: int, features: np.ndarray, labels: np.ndarray) -> float:
        """Fraction of rows classified right, as SentEval's ``score``."""
        return float((self.predict(fit, strength, features) == labels).mean())


def initial_layer(dim: int, classes: int, seed: int) -> tuple[Tensor, Tensor]:
    """``nn.Linear(dim, classes)`` as created right after ``torch.manual_seed(seed)``: (dim, classes), (classes,).

    The global RNG is restored afterwards, so the host's random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = torch.nn.Linear(dim, classes)
    return layer.weight.detach().T.contiguous(), layer.bias.detach().clone()


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    classes: int,
    fits: list[Fit],
    l2: np.ndarray,
    settings: ClassifierSettings | None = None,
) -> FittedModels:
    """Train one logistic regression per (fit, L2 strength), all at once, with SentEval's early stopping.

    Args:
        features: (n, dim) all rows any fit uses.
        labels: (n,) class indices 0 .. classes - 1.
        classes: Number of classes.
        fits: Training and validation rows of each fit; the strengths of one fit share its minibatches.
        l2: (fits, strengths) weight decay of each model.
        settings: Classifier settings (default :class:`ClassifierSettings`).
    """
    settings = settings or ClassifierSettings()
    l2 = np.asarray(l2, dtype=np.float64)
    if l2.ndim != 2 or l2.shape[0] != len(fits):
        raise ValueError(f"l2 must have shape (fits={len(fits)}, strengths), got {l2.shape}")
    threads = torch.get_num_threads()
    # Each step is a few small, memory-bound operations: a second thread costs more in
    # synchronisation than it saves (about 10x slower on a busy 2-core machine). Restored after.
    torch.set_num_threads(settings.threads)
    try:
        with torch.no_grad():
            return _Trainer(features, labels, classes, fits, l2, settings).run()
    finally:
        torch.set_num_threads(threads)


class _Trainer:
    """The stacked training loop over the live fits; parameters are (live fits, dim, strengths · classes).

    A fit whose strengths have all stopped is dropped from the live tensors; a strength that has
    stopped inside a live fit keeps training (its best weights are already kept, so that is harmless
    and cheaper than masking it).
    """

    def __init__(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        classes: int,
        fits: list[Fit],
        l2: np.ndarray,
        settings: ClassifierSettings,
    ) -> None:
        self.x = torch.as_tensor(np.ascontiguousarray(features), dtype=torch.float32)  # (n, dim)
        self.y = torch.as_tensor(np.asarray(labels), dtype=torch.int64)  # (n,)
        self.fits, self.settings, self.classes = fits, settings, classes
        g, self.strengths = l2.shape
        weight, bias = initial_layer(self.x.shape[1], classes, settings.seed)
        self.live = np.arange(g)
        self.weight = weight.repeat(1, self.strengths).unsqueeze(0).repeat(g, 1, 1)  # (live, dim, r·c)
        self.bias = bias.repeat(self.strengths).unsqueeze(0).repeat(g, 1)  # (live, r·c)
        self.decay = torch.as_tensor(l2, dtype=torch.float32).repeat_interleave(classes, dim=1)  # (live, r·c)
        self.moments = [torch.zeros_like(p) for p in (self.weight, self.weight, self.bias, self.bias)]
        self.steps = np.zeros(g, dtype=np.int64)
        self.active = np.ones((g, self.strengths), dtype=bool)
        self.best = np.full((g, self.strengths), -1.0)
        self.misses = np.zeros((g, self.strengths), dtype=np.int64)
        self.best_weight, self.best_bias = self.weight.clone(), self.bias.clone()

    def run(self) -> FittedModels:
        settings = self.settings
        epoch = 0
        while len(self.live) and epoch <= settings.max_epoch:
            for _ in range(settings.epoch_size):
                self.train_epoch()
            epoch += settings.epoch_size
            self.check()
        g, r, c = len(self.fits), self.strengths, self.classes
        return FittedModels(
            self.best_weight.view(g, -1, r, c).permute(0, 2, 1, 3).contiguous(),
            self.best_bias.view(g, r, c),
            self.best,
        )

    def train_epoch(self) -> None:
        """One pass over each live fit's training rows, in its own seeded random order."""
        size = self.settings.batch_size
        orders = [
            self.fits[i].train[self.fits[i].rng.permutation(len(self.fits[i].train))] for i in self.live
        ]
        padded = math.ceil(max(len(order) for order in orders) / size) * size
        rows = np.zeros((len(orders), padded), dtype=np.int64)
        counts = np.zeros((len(orders), padded // size), dtype=np.int64)
        for k, order in enumerate(orders):
            rows[k, : len(order)] = order
            counts[k] = np.clip(len(order) - np.arange(0, padded, size), 0, size)
        rows_t = torch.from_numpy(rows)
        for step in range(padded // size):
            self.step(rows_t[:, step * size : (step + 1) * size], counts[:, step])

    def step(self, rows: Tensor, counts: np.ndarray) -> None:
        """One Adam step of every live model on its minibatch: cross-entropy averaged over the batch."""
        g, b = rows.shape
        r, c = self.strengths, self.classes
        flat = rows.reshape(-1)
        x = self.x.index_select(0, flat).view(g, b, -1)  # (g, b, dim); index_select: 2x faster than x[rows]
        logits = torch.baddbmm(self.bias.unsqueeze(1), x, self.weight).view(g, b, r, c)
        # softmax over the classes, spelled out: torch's kernel is 5x slower on a last dimension of 2
        gradient = (logits - logits.amax(dim=-1, keepdim=True)).exp_()
        gradient /= gradient.sum(dim=-1, keepdim=True)
        target = self.y.index_select(0, flat).view(g, b, 1, 1).expand(g, b, r, 1)
        gradient.scatter_add_(-1, target, torch.full(target.shape, -1.0))
        if (counts == b).all():
            gradient /= b
        else:  # the last, shorter minibatch of an epoch: padding rows weigh nothing
            weights = (torch.arange(b) < torch.from_numpy(counts).unsqueeze(1)) / torch.from_numpy(
                counts
            ).clamp(min=1).unsqueeze(1)
            gradient *= weights.view(g, b, 1, 1)
        gradient = gradient.view(g, b, r * c)
        grads = (x.transpose(1, 2) @ gradient, gradient.sum(dim=1))  # (g, dim, r·c), (g, r·c)

        stepping = counts > 0
        self.steps += stepping
        steps = np.maximum(self.steps, 1).astype(np.float64)
        beta1, beta2 = ADAM_BETAS
        rate = torch.as_tensor(self.settings.learning_rate / (1 - beta1**steps), dtype=torch.float32)
        root = torch.as_tensor(np.sqrt(1 - beta2**steps), dtype=torch.float32)
        m_w, v_w, m_b, v_b = self.moments
        states = (
            (self.weight, grads[0], m_w, v_w, self.decay.unsqueeze(1)),
            (self.bias, grads[1], m_b, v_b, self.decay),
        )
        for param, grad, first, second, decay in states:
            shape = (g,) + (1,) * (param.dim() - 1)
            if stepping.all():
                _adam_(param, grad, first, second, decay, rate.view(shape), root.view(shape))
            else:  # a fit with fewer rows has no minibatch left: it must not move
                k = torch.from_numpy(np.flatnonzero(stepping))
                p, m, v = param[k], first[k], second[k]
                _adam_(p, grad[k], m, v, decay[k], rate[k].view(-1, *shape[1:]), root[k].view(-1, *shape[1:]))
                param[k], first[k], second[k] = p, m, v

    def check(self) -> None:
        """Validation accuracy of every live model; keep the best weights, stop as SentEval does."""
        r, c = self.strengths, self.classes
        for k, i in enumerate(self.live):
            dev = self.fits[i].dev
            logits = self.x[dev] @ self.weight[k] + self.bias[k]  # (n_dev, r·c)
            predicted = logits.view(len(dev), r, c).argmax(dim=-1)
            accuracy = (predicted == self.y[dev].unsqueeze(1)).double().mean(dim=0).numpy()
            for j in np.flatnonzero(self.active[i]):
                if accuracy[j] > self.best[i, j]:
                    self.best[i, j] = accuracy[j]
                    self.best_weight[i, :, j * c : (j + 1) * c] = self.weight[k, :, j * c : (j + 1) * c]
                    self.best_bias[i, j * c : (j + 1) * c] = self.bias[k, j * c : (j + 1) * c]
                else:
                    if self.misses[i, j] >= self.settings.tenacity:
                        self.active[i, j] = False
                    self.misses[i, j] += 1
        keep = self.active[self.live].any(axis=1)
        if not keep.all():
            kept = torch.from_numpy(np.flatnonzero(keep))
            self.live, self.steps = self.live[keep], self.steps[keep]
            self.weight, self.bias, self.decay = self.weight[kept], self.bias[kept], self.decay[kept]
            self.moments = [t[kept] for t in self.moments]


def _adam_(
    param: Tensor, grad: Tensor, first: Tensor, second: Tensor, decay: Tensor, rate: Tensor, root: Tensor
) -> None:
    """``torch.optim.Adam``'s update with L2 ``weight_decay``, in place.

    ``rate`` is the learning rate over the first bias correction and ``root`` the square root of the
    second, per fit (their step counts can differ).
    """
    beta1, beta2 = ADAM_BETAS
    grad.add_(decay * param)
    first.lerp_(grad, 1 - beta1)
    second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(first / (second.sqrt() / root + ADAM_EPS) * rate)
