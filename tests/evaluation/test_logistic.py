import copy

import numpy as np
import pytest
import torch

from sbert.evaluation.logistic import ClassifierSettings, Fit, fit_logistic

SETTINGS = ClassifierSettings(max_epoch=24)


@pytest.fixture(autouse=True)
def one_thread():  # type: ignore[no-untyped-def]
    """The one-at-a-time reference fits are tiny: extra threads only slow them down."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def noisy(n: int, dim: int = 6, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=n)
    features = rng.normal(size=(n, dim)).astype(np.float32)
    features[np.arange(n), labels] += 1.0  # learnable, not separable
    return features, labels


def sequential(x: np.ndarray, y: np.ndarray, classes: int, fit: Fit, l2: float, settings: ClassifierSettings):  # type: ignore[no-untyped-def]
    """One fit written as SentEval's PyTorchClassifier.fit runs it, with torch's own Adam."""
    torch.manual_seed(settings.seed)
    model = torch.nn.Linear(x.shape[1], classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.learning_rate, weight_decay=l2)
    train_x, train_y = torch.from_numpy(x[fit.train]), torch.from_numpy(y[fit.train])
    dev_x, dev_y = torch.from_numpy(x[fit.dev]), torch.from_numpy(y[fit.dev])
    epoch, best, misses, best_model = 0, -1.0, 0, None
    while epoch <= settings.max_epoch:
        for _ in range(settings.epoch_size):
            order = fit.rng.permutation(len(train_x))
            for i in range(0, len(train_x), settings.batch_size):
                batch = torch.from_numpy(order[i : i + settings.batch_size])
                loss = torch.nn.functional.cross_entropy(model(train_x[batch]), train_y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        epoch += settings.epoch_size
        with torch.no_grad():
            accuracy = (model(dev_x).argmax(1) == dev_y).double().mean().item()
        if accuracy > best:
            best, best_model = accuracy, copy.deepcopy(model)
        else:
            if misses >= settings.tenacity:
                break
            misses += 1
    return best, best_model


def test_stacked_fits_equal_one_at_a_time_fits() -> None:
    x, y = noisy(500)
    fits = [Fit.with_dev(np.arange(0, 300), np.arange(300, 400)), Fit.with_split(np.arange(100, 500), 0.05)]
    l2 = np.array([[1e-5, 1e-2], [1e-3, 1e-1]])
    models = fit_logistic(x, y, 3, fits, l2, SETTINGS)
    for i in range(2):
        for j in range(2):
            again = [
                Fit.with_dev(np.arange(0, 300), np.arange(300, 400)),
                Fit.with_split(np.arange(100, 500), 0.05),
            ]
            best, model = sequential(x, y, 3, again[i], l2[i, j], SETTINGS)
            assert models.dev_accuracy[i, j] == best
            assert models.weight[i, j].numpy() == pytest.approx(model.weight.detach().numpy().T, abs=1e-5)
            assert models.bias[i, j].numpy() == pytest.approx(model.bias.detach().numpy(), abs=1e-5)
    expected = model(torch.from_numpy(x)).argmax(1).numpy()
    assert (models.predict(1, 1, x) == expected).mean() > 0.99


def test_validation_split_is_sentevals_and_host_rng_is_untouched() -> None:
    fit = Fit.with_split(np.arange(10, 110), 0.05, seed=1111)
    permutation = np.random.RandomState(1111).permutation(100)
    assert fit.dev.tolist() == (10 + permutation[:5]).tolist()
    assert sorted([*fit.train, *fit.dev]) == list(range(10, 110))
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    x, y = noisy(80, classes=2)
    fit_logistic(x, y, 2, [Fit.with_dev(np.arange(60), np.arange(60, 80))], np.array([[0.0]]), SETTINGS)
    assert torch.equal(torch.rand(3), expected)  # the host's random state is left alone


def test_early_stopping_stops_at_the_sixth_check_without_gain() -> None:
    x, y = noisy(120, classes=2)
    y = np.random.default_rng(3).integers(0, 2, size=120)  # nothing to learn: accuracy soon stalls
    settings = ClassifierSettings(max_epoch=1000)
    models = fit_logistic(
        x, y, 2, [Fit.with_dev(np.arange(100), np.arange(100, 120))], np.array([[0.0]]), settings
    )
    best, _ = sequential(x, y, 2, Fit.with_dev(np.arange(100), np.arange(100, 120)), 0.0, settings)
    assert models.dev_accuracy[0, 0] == best


def test_l2_shape_is_checked() -> None:
    x, y = noisy(20)
    with pytest.raises(ValueError, match="l2 must have shape"):
        fit_logistic(x, y, 3, [Fit.with_dev(np.arange(10), np.arange(10, 20))], np.array([1e-3]))
