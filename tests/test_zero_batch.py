"""Issue 14: a batch of zero samples goes through every layer, forward and backward, as in PyTorch
(empty outputs of the right shape; parameter gradients zero; BatchNorm's running statistics
untouched), and ResNet-18 on zero images gives a (0, 10) output in train and eval."""
import numpy as np
import pytest

import ember


def _layers(M):
    nn = M.nn
    return {
        "BatchNorm1d": (lambda: nn.BatchNorm1d(3), (0, 3)),
        "BatchNorm1d-3d": (lambda: nn.BatchNorm1d(3), (0, 3, 5)),
        "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (0, 3, 4, 4)),
        "BatchNorm3d": (lambda: nn.BatchNorm3d(3), (0, 3, 2, 2, 2)),
        "Conv1d": (lambda: nn.Conv1d(3, 4, 3), (0, 3, 8)),
        "Conv2d": (lambda: nn.Conv2d(3, 4, 3, padding=1), (0, 3, 8, 8)),
        "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2), (0, 3, 4, 4)),
        "MaxPool1d": (lambda: nn.MaxPool1d(2), (0, 3, 4)),
        "MaxPool2d": (lambda: nn.MaxPool2d(2), (0, 3, 4, 4)),
        "AvgPool2d": (lambda: nn.AvgPool2d(2), (0, 3, 4, 4)),
        "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(1), (0, 3, 4, 4)),
        "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), (0, 3, 4, 4)),
        "Linear": (lambda: nn.Linear(3, 5), (0, 3)),
        "LayerNorm": (lambda: nn.LayerNorm(3), (0, 3)),
        "GroupNorm": (lambda: nn.GroupNorm(1, 3), (0, 3, 4)),
        "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3), (0, 3, 4, 4)),
        "RMSNorm": (lambda: nn.RMSNorm(3), (0, 3)),
        "Dropout": (lambda: nn.Dropout(0.5), (0, 3)),
        "Softmax": (lambda: nn.Softmax(1), (0, 3)),
        "LogSoftmax": (lambda: nn.LogSoftmax(1), (0, 3)),
        "Flatten": (lambda: nn.Flatten(), (0, 3, 4)),
        "RNN": (lambda: nn.RNN(3, 4, batch_first=True), (0, 5, 3)),
        "LSTM": (lambda: nn.LSTM(3, 4, batch_first=True), (0, 5, 3)),
        "GRU": (lambda: nn.GRU(3, 4, batch_first=True), (0, 5, 3)),
        "MultiheadAttention": (lambda: nn.MultiheadAttention(4, 2, batch_first=True), (0, 5, 4)),
        "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(4, 2, 8, batch_first=True, dropout=0.0),
                                    (0, 5, 4)),
        "Upsample": (lambda: nn.Upsample(scale_factor=2), (0, 3, 4, 4)),
    }


def _run(M, name, training):
    make, shape = _layers(M)[name]
    M.manual_seed(0)
    m = make()
    m.train(training)
    x = M.zeros(shape, requires_grad=True)
    out = m(x, x, x)[0] if name == "MultiheadAttention" else m(x)
    if isinstance(out, tuple):
        out = out[0]
    out.sum().backward()
    grads = {k: p.grad.numpy() if p.grad is not None else None for k, p in m.named_parameters()}
    bufs = {k: b.numpy().copy() for k, b in m.named_buffers()}
    return tuple(out.shape), tuple(x.grad.shape), grads, bufs


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name", sorted(_layers(ember)))
def test_zero_size_batch_through_layer(torch, name, training):
    e_out, e_gx, e_grads, e_bufs = _run(ember, name, training)
    t_out, t_gx, t_grads, t_bufs = _run(torch, name, training)
    assert e_out == t_out and e_gx == t_gx
    assert e_grads.keys() == t_grads.keys()
    for k in t_grads:
        if t_grads[k] is None:
            assert e_grads[k] is None or not e_grads[k].any(), k
        else:
            np.testing.assert_array_equal(e_grads[k], t_grads[k], err_msg=k)
    assert e_bufs.keys() == t_bufs.keys()
    for k in t_bufs:     # running statistics untouched (num_batches_tracked counts the call, as PyTorch)
        np.testing.assert_array_equal(e_bufs[k], t_bufs[k], err_msg=k)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_resnet18_on_zero_images(training):
    m = ember.models.resnet18(num_classes=10)
    m.train(training)
    x = ember.zeros(0, 3, 32, 32, requires_grad=True)
    y = m(x)
    assert tuple(y.shape) == (0, 10)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 32, 32)
    assert not m.fc.weight.grad.numpy().any() and not m.bn1.weight.grad.numpy().any()
    assert np.array_equal(m.bn1.running_mean.numpy(), np.zeros(64))     # untouched by the empty batch


def test_zero_batch_batch_norm_functional(torch):
    for training in (True, False):
        a = ember.nn.functional.batch_norm(ember.zeros(0, 3), ember.zeros(3), ember.ones(3), training=training)
        b = torch.nn.functional.batch_norm(torch.zeros(0, 3), torch.zeros(3), torch.ones(3), training=training)
        assert tuple(a.shape) == tuple(b.shape) == (0, 3)
    # one value per channel stays an error, as in PyTorch
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        ember.nn.functional.batch_norm(ember.zeros(1, 3), ember.zeros(3), ember.ones(3), training=True)


def test_rnn_empty_sequence_is_an_error():
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        ember.nn.LSTM(3, 4, batch_first=True)(ember.zeros(2, 0, 3))


def _losses(M):
    F = M.nn.functional
    x = M.zeros(0, 5, requires_grad=True)
    y = M.zeros(0, dtype=M.int64)
    t = M.zeros(0, 5)
    return x, {
        "cross_entropy": lambda r: F.cross_entropy(x, y, reduction=r),
        "cross_entropy_smoothing": lambda r: F.cross_entropy(x, y, reduction=r, label_smoothing=0.1),
        "cross_entropy_probs": lambda r: F.cross_entropy(x, t, reduction=r),
        "nll_loss": lambda r: F.nll_loss(x, y, reduction=r),
        "mse_loss": lambda r: F.mse_loss(x, t, reduction=r),
        "l1_loss": lambda r: F.l1_loss(x, t, reduction=r),
        "smooth_l1_loss": lambda r: F.smooth_l1_loss(x, t, reduction=r),
        "huber_loss": lambda r: F.huber_loss(x, t, reduction=r),
        "binary_cross_entropy": lambda r: F.binary_cross_entropy(x.sigmoid(), t, reduction=r),
        "binary_cross_entropy_with_logits": lambda r: F.binary_cross_entropy_with_logits(x, t, reduction=r),
    }


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(_losses(ember)[1]))
def test_losses_on_an_empty_batch(torch, name, reduction):
    """mean over nothing is nan, sum is 0, none is empty, as in PyTorch; backward gives an empty grad."""
    res = []
    for M in (ember, torch):
        x, fns = _losses(M)
        v = fns[name](reduction)
        v.sum().backward()
        res.append((tuple(v.shape), np.abs(v.detach().numpy()).tolist() if v.dim() else abs(float(v)),
                    tuple(x.grad.shape)))
    (es, ev, eg), (ts, tv, tg) = res
    assert es == ts and eg == tg
    np.testing.assert_array_equal(ev, tv)


def _functional(M):
    F = M.nn.functional
    z = lambda *s, **k: M.zeros(*s, **k)  # noqa: E731
    return {
        "scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(z(0, 2, 5, 4, requires_grad=True),
                                                                               z(0, 2, 5, 4), z(0, 2, 5, 4)),
        "embedding": lambda: F.embedding(z(0, 3, dtype=M.int64), z(10, 4, requires_grad=True)),
        "interpolate": lambda: F.interpolate(z(0, 3, 4, 4, requires_grad=True), scale_factor=2, mode="bilinear"),
        "pad": lambda: F.pad(z(0, 3, 4, requires_grad=True), (1, 1)),
        "normalize": lambda: F.normalize(z(0, 4, requires_grad=True)),
        "cosine_similarity": lambda: F.cosine_similarity(z(0, 4, requires_grad=True), z(0, 4)),
        "max_pool2d_indices": lambda: F.max_pool2d(z(0, 3, 4, 4, requires_grad=True), 2, return_indices=True)[0],
        "avg_pool1d": lambda: F.avg_pool1d(z(0, 3, 4, requires_grad=True), 2),
        "conv_transpose2d": lambda: F.conv_transpose2d(z(0, 3, 4, 4, requires_grad=True), z(3, 2, 3, 3)),
        "glu": lambda: F.glu(z(0, 4, requires_grad=True)),
        "bmm": lambda: M.bmm(z(0, 3, 4, requires_grad=True), z(0, 4, 5)),
        "cdist": lambda: M.cdist(z(0, 3, requires_grad=True), z(2, 3)),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(z(0, 4, requires_grad=True), z(0, 4), z(0, 4),
                                                             reduction="sum"),
        "kl_div": lambda: F.kl_div(z(0, 4, requires_grad=True), z(0, 4), reduction="sum"),
        "gaussian_nll_loss": lambda: F.gaussian_nll_loss(z(0, 4, requires_grad=True), z(0, 4), M.ones(0, 4),
                                                         reduction="sum"),
    }


@pytest.mark.parametrize("name", sorted(_functional(ember)))
def test_functional_on_an_empty_batch(torch, name):
    shapes = []
    for M in (ember, torch):
        v = _functional(M)[name]()
        if v.requires_grad:
            v.sum().backward()
        shapes.append(tuple(v.shape))
    assert shapes[0] == shapes[1]
