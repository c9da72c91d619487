"""op_db entries of the nn breadth: 3-d convolution, 3-d/adaptive/fractional pooling, max unpooling,
unfold/fold, resampling (interpolate, grid_sample), CTC loss and the composites built on them.

Entries for composites name the registry primitive they dispatch (e.g. max_pool3d's values come
from ``gather``), so PyTorch checks the public function through that primitive's entry."""
import numpy as np

import op_db
from op_db import add, fixed, S, U, distinct, F

_reg = op_db._reg


def _pos(r, shape, lo=0.5, hi=2.0):
    return r.uniform(lo, hi, shape)


# ----------------------------------------------------------------------------- convolution

add("conv3d", fn=lambda m, x, w, b=None, **kw: F(m).conv3d(x, w, b, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 4, 3)), U(r, (2, 2, 2, 2, 2)), U(r, (2,))), {"padding": 1, "stride": 2}),
                  lambda r: S((U(r, (2, 4, 3, 3, 4)), U(r, (4, 2, 3, 1, 2))), {"padding": "same", "groups": 2}),
                  lambda r: S((U(r, (2, 3, 4, 3)), U(r, (2, 2, 2, 1, 2))), {"dilation": (1, 2, 1)},
                              desc="unbatched")), fd_tol=1e-4)
add("conv3d_backward_input", "conv_transpose3d",
    fn=lambda m, x, w, b=None, **kw: F(m).conv_transpose3d(x, w, b, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 2, 2, 2)), U(r, (2, 2, 2, 2, 2)), U(r, (4,))), {"stride": 2, "groups": 2}),
                  lambda r: S((U(r, (2, 3, 2, 3, 2)), U(r, (3, 2, 3, 2, 2))),
                              {"stride": (2, 1, 2), "padding": 1, "output_padding": (1, 0, 1)}),
                  lambda r: S((U(r, (1, 2, 2, 2, 2)), U(r, (2, 1, 2, 2, 2))),
                              {"stride": 1, "dilation": 2, "output_padding": 1},
                              desc="output padding above the stride")), fd_tol=1e-4)
add("conv3d_backward_weight", fn=_reg("conv3d_backward_weight"), oracle=False,
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 3, 3)), U(r, (1, 2, 2, 2, 2))),
                              {"ksize": (2, 2, 2), "stride": (1, 1, 1), "pad": ((0, 0),) * 3, "dilation": (1, 1, 1),
                               "groups": 1})), fd_tol=1e-4)
add("conv2d_backward_input", "conv_transpose1d",
    fn=lambda m, x, w, b=None, **kw: F(m).conv_transpose1d(x, w, b, **kw),
    samples=fixed(lambda r: S((U(r, (2, 2, 4)), U(r, (2, 3, 3)), U(r, (3,))), {"stride": 2, "padding": 1,
                                                                              "output_padding": 1})), fd_tol=1e-4)

# ----------------------------------------------------------------------------- pooling

add("window_argmax", "max_pool3d_indices", grad=False,
    fn=lambda m, x, **kw: F(m).max_pool3d(x, return_indices=True, **kw)[1],
    samples=fixed(lambda r: S((distinct(r, (1, 2, 5, 4, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1}),
                  lambda r: S((distinct(r, (2, 3, 4, 5)),), {"kernel_size": 2, "ceil_mode": True}, desc="unbatched")))
add("window_argmax", "adaptive_max_pool1d_indices", grad=False,
    fn=lambda m, x, o: F(m).adaptive_max_pool1d(x, o, return_indices=True)[1],
    samples=fixed(lambda r: S((distinct(r, (2, 3, 7)), 3))))
add("gather", "max_pool3d", fn=lambda m, x, **kw: F(m).max_pool3d(x, **kw),
    samples=fixed(lambda r: S((distinct(r, (1, 2, 5, 4, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1}),
                  lambda r: S((distinct(r, (2, 2, 4, 5, 3)),), {"kernel_size": (2, 3, 2), "dilation": (1, 1, 2),
                                                                "ceil_mode": True})))
add("gather", "adaptive_max_pool3d", fn=lambda m, x, o: F(m).adaptive_max_pool3d(x, o),
    samples=fixed(lambda r: S((distinct(r, (1, 2, 5, 4, 5)), (2, 3, 3)))))
add("gather", "adaptive_max_pool1d", fn=lambda m, x, o: F(m).adaptive_max_pool1d(x, o),
    samples=fixed(lambda r: S((distinct(r, (2, 3, 7)), 3))))
add("fractional_max_pool_argmax", "fractional_max_pool2d_indices", grad=False,
    fn=lambda m, x, s, **kw: F(m).fractional_max_pool2d(x, 2, _random_samples=s, return_indices=True, **kw)[1],
    samples=fixed(lambda r: S((distinct(r, (2, 3, 7, 6)), r.uniform(0, 1, (2, 3, 2))), {"output_size": (4, 3)},
                              nondiff=(1,))))
add("gather", "fractional_max_pool2d",
    fn=lambda m, x, s, **kw: F(m).fractional_max_pool2d(x, 2, _random_samples=s, **kw),
    samples=fixed(lambda r: S((distinct(r, (2, 3, 7, 6)), r.uniform(0, 1, (2, 3, 2))), {"output_size": (4, 3)},
                              nondiff=(1,)),
                  lambda r: S((distinct(r, (3, 7, 6)), r.uniform(0, 1, (1, 3, 2))), {"output_ratio": (0.5, 0.5)},
                              nondiff=(1,), desc="unbatched")))
add("gather", "fractional_max_pool3d",
    fn=lambda m, x, s, **kw: F(m).fractional_max_pool3d(x, (2, 1, 2), _random_samples=s, **kw),
    samples=fixed(lambda r: S((distinct(r, (1, 2, 5, 4, 6)), r.uniform(0, 1, (1, 2, 3))), {"output_size": (3, 2, 4)},
                              nondiff=(1,))))
add("avg_pool3d", fn=lambda m, x, **kw: F(m).avg_pool3d(x, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 5, 4, 5)),), {"kernel_size": 3, "stride": 2, "padding": 1,
                                                         "ceil_mode": True, "count_include_pad": False}),
                  lambda r: S((U(r, (2, 4, 4, 6)),), {"kernel_size": 2}, desc="unbatched"),
                  lambda r: S((U(r, (1, 2, 4, 4, 4)),), {"kernel_size": (2, 3, 2), "divisor_override": 3})))
add("avg_pool3d_backward", fn=_reg("avg_pool3d_backward"), oracle=False,
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 2, 3)),), {"in_sp": (5, 4, 5), "kernel": (3, 3, 3), "stride": (2, 2, 2),
                                                         "pad": (1, 1, 1), "out": (3, 2, 3), "count_include_pad": False,
                                                         "divisor_override": None})))
add("matmul", "adaptive_avg_pool3d", fn=lambda m, x, o: F(m).adaptive_avg_pool3d(x, o),
    samples=fixed(lambda r: S((U(r, (1, 2, 5, 4, 6)), (3, None, 4)))))


def _pooled(r, nsp, shape):
    """(values, int64 indices) of a 2x max pool of a tie-free input, computed without torch."""
    x = distinct(r, shape)
    sp = shape[-nsp:]
    lead = shape[:-nsp]
    out_sp = tuple(n // 2 for n in sp)
    idx = np.zeros(lead + out_sp, np.int64)
    val = np.zeros(lead + out_sp)
    for o in np.ndindex(*out_sp):
        best = None
        for k in np.ndindex(*(2,) * nsp):
            pos = tuple(2 * a + b for a, b in zip(o, k))
            v = x[(Ellipsis,) + pos]
            flat = int(np.ravel_multi_index(pos, sp))
            if best is None:
                best, bi = v.copy(), np.full(lead, flat)
            else:
                better = v > best
                best = np.where(better, v, best)
                bi = np.where(better, flat, bi)
        val[(Ellipsis,) + o] = best
        idx[(Ellipsis,) + o] = bi
    return val, idx


for _n, _shape in ((1, (2, 3, 6)), (2, (2, 2, 4, 6)), (3, (1, 2, 4, 2, 4))):
    def _mk(n=_n, shape=_shape):
        def sample(r):
            v, i = _pooled(r, n, shape)
            return S((v, i), {"kernel_size": 2})
        return sample
    add("scatter", f"max_unpool{_n}d", fn=(lambda n: lambda m, x, i, **kw: getattr(F(m), f"max_unpool{n}d")(x, i, **kw))(_n),
        samples=fixed(_mk()))

op_db.NON_DIFFERENTIABLE.extend(["window_argmax", "fractional_max_pool_argmax"])
op_db.INTERNAL.extend(["conv3d_backward_weight", "avg_pool3d_backward"])

# ----------------------------------------------------------------------------- composites of registry ops

add("where", "prelu", fn=lambda m, x, w: F(m).prelu(x, w),
    samples=fixed(lambda r: S((op_db.away(r, (2, 3, 4)), _pos(r, (3,), 0.1, 0.5))),
                  lambda r: S((op_db.away(r, (2, 3)), _pos(r, (1,), 0.1, 0.5))),
                  lambda r: S((op_db.away(r, (5,)), _pos(r, (1,), 0.1, 0.5)), desc="1-D")))
add("where", "rrelu_eval", fn=lambda m, x: F(m).rrelu(x, 0.1, 0.3),
    samples=fixed(lambda r: S((op_db.away(r, (2, 3, 4)),))))
add("transpose", "channel_shuffle", fn=lambda m, x: F(m).channel_shuffle(x, 2),
    samples=fixed(lambda r: S((U(r, (2, 4, 3)),)), lambda r: S((U(r, (1, 6, 2, 2)),))))
add("div", "local_response_norm", fn=lambda m, x, **kw: F(m).local_response_norm(x, **kw),
    samples=fixed(lambda r: S((U(r, (2, 5, 3)),), {"size": 3}),
                  lambda r: S((U(r, (2, 4, 3, 2)),), {"size": 2, "alpha": 0.1, "beta": 0.5, "k": 2.0}),
                  lambda r: S((U(r, (1, 4, 2, 2, 2)),), {"size": 3, "alpha": 0.2})))
add("gather", "multi_margin_loss", fn=lambda m, x, t, *w, **kw: F(m).multi_margin_loss(x, t, weight=w[0] if w else None, **kw),
    samples=fixed(lambda r: S((op_db.away_int(r, (4, 5)) * 0.37, op_db.ints(r, (4,), 0, 5))),
                  lambda r: S((op_db.away_int(r, (4, 5)) * 0.37, op_db.ints(r, (4,), 0, 5)), {"p": 2, "margin": 0.5,
                                                                                              "reduction": "none"}),
                  lambda r: S((op_db.away_int(r, (3, 4)) * 0.37, op_db.ints(r, (3,), 0, 4), _pos(r, (4,))),
                              {"reduction": "sum"}, nondiff=(2,))))
add("gather", "multilabel_margin_loss", fn=lambda m, x, t, **kw: F(m).multilabel_margin_loss(x, t, **kw),
    samples=fixed(lambda r: S((op_db.away_int(r, (3, 4)) * 0.37, np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 1, 2, 0]]))),
                  lambda r: S((op_db.away_int(r, (3, 4)) * 0.37, np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, 1, 2, 3]])),
                              {"reduction": "none"})))
add("linalg_vector_norm", "triplet_margin_with_distance_loss",
    fn=lambda m, a, p, n, **kw: F(m).triplet_margin_with_distance_loss(a, p, n, **kw),
    samples=fixed(lambda r: S((U(r, (3, 4)), U(r, (3, 4)), U(r, (3, 4)))),
                  lambda r: S((U(r, (3, 4)), U(r, (3, 4)), U(r, (3, 4))), {"swap": True, "margin": 2.0,
                                                                           "reduction": "none"})))
add("conv2d", "unfold", fn=lambda m, x, **kw: F(m).unfold(x, **kw),
    samples=fixed(lambda r: S((U(r, (2, 3, 4, 5)),), {"kernel_size": 2}),
                  lambda r: S((U(r, (2, 4, 5)),), {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1,
                                                   "stride": (2, 1)}, desc="unbatched")))
add("conv2d_backward_input", "fold", fn=lambda m, x, **kw: F(m).fold(x, **kw),
    samples=fixed(lambda r: S((U(r, (2, 12, 12)),), {"output_size": (4, 5), "kernel_size": 2}),
                  lambda r: S((U(r, (2, 6, 9)),), {"output_size": (4, 5), "kernel_size": (2, 3), "dilation": (1, 2),
                                                   "padding": 1, "stride": (2, 1)}),
                  lambda r: S((U(r, (8, 6)),), {"output_size": (5, 6), "kernel_size": 2, "stride": 2},
                              desc="unbatched, uncovered border")))
add("matmul", "upsample_bilinear", fn=lambda m, x, **kw: F(m).upsample_bilinear(x, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 4)),), {"scale_factor": 2})))
add("upsample_nearest", "upsample_nearest_fn", fn=lambda m, x, **kw: F(m).upsample_nearest(x, **kw),
    samples=fixed(lambda r: S((U(r, (1, 2, 3, 4)),), {"size": (5, 7)})))

# ----------------------------------------------------------------------------- resampling


def _interp(m, x, **kw):
    return F(m).interpolate(x, **kw)


add("matmul", "interpolate_bicubic", fn=_interp,
    samples=fixed(lambda r: S((U(r, (1, 2, 4, 5)),), {"size": (7, 3), "mode": "bicubic"}),
                  lambda r: S((U(r, (1, 2, 4, 5)),), {"scale_factor": 1.5, "mode": "bicubic", "align_corners": True})))
add("matmul", "interpolate_antialias", fn=_interp,
    samples=fixed(lambda r: S((U(r, (1, 2, 9, 8)),), {"size": (4, 3), "mode": "bilinear", "antialias": True}),
                  lambda r: S((U(r, (1, 2, 9, 8)),), {"scale_factor": 0.4, "mode": "bicubic", "antialias": True})))
add("matmul", "interpolate_linear", fn=_interp,
    samples=fixed(lambda r: S((U(r, (2, 2, 5)),), {"size": 8, "mode": "linear"}),
                  lambda r: S((U(r, (1, 2, 3, 4, 2)),), {"scale_factor": (1.5, 0.5, 2), "mode": "trilinear",
                                                         "align_corners": True})))
add("index_select", "interpolate_long_dim", fn=_interp,  # past _DENSE_MAX: the tap-by-tap path
    samples=fixed(lambda r: S((U(r, (1, 2, 170)),), {"size": 41, "mode": "linear"}),
                  lambda r: S((U(r, (1, 1, 2, 170)),), {"size": (3, 60), "mode": "bicubic", "align_corners": True}),
                  lambda r: S((U(r, (1, 1, 3, 170)),), {"size": (2, 50), "mode": "bilinear", "antialias": True})))
add("upsample_nearest", "interpolate_nearest_exact", fn=_interp,
    samples=fixed(lambda r: S((U(r, (1, 2, 5, 4)),), {"size": (3, 7), "mode": "nearest-exact"})))
add("matmul", "interpolate_area", fn=_interp,
    samples=fixed(lambda r: S((U(r, (1, 2, 7, 5)),), {"size": (3, 2), "mode": "area"}),
                  lambda r: S((U(r, (1, 2, 5, 4, 3)),), {"size": (2, 3, 2), "mode": "area"})))
add("gather", "grid_sample", fn=lambda m, x, g, **kw: F(m).grid_sample(x, g, **kw),
    samples=fixed(lambda r: S((U(r, (2, 2, 4, 5)), op_db.away_int(r, (2, 3, 2, 2), -1.3, 1.3, 0.05) * 0.93),
                              {"align_corners": False}),
                  lambda r: S((U(r, (1, 2, 4, 5)), U(r, (1, 3, 2, 2), -1.2, 1.2)),
                              {"mode": "bicubic", "padding_mode": "border", "align_corners": True}),
                  lambda r: S((U(r, (1, 2, 3, 4, 3)), U(r, (1, 2, 2, 3, 3), -0.9, 0.9)),
                              {"padding_mode": "reflection", "align_corners": False}),
                  lambda r: S((U(r, (1, 2, 4, 5)), U(r, (1, 3, 2, 2), -1.2, 1.2)), {"mode": "nearest",
                                                                                   "align_corners": False},
                              nondiff=(1,))), fd_tol=1e-4)
add("matmul", "affine_grid", fn=lambda m, t, **kw: F(m).affine_grid(t, **kw),
    samples=fixed(lambda r: S((U(r, (2, 2, 3)),), {"size": (2, 3, 4, 5), "align_corners": False}),
                  lambda r: S((U(r, (1, 3, 4)),), {"size": (1, 2, 3, 2, 4), "align_corners": True})))

# ----------------------------------------------------------------------------- CTC loss


def _ctc_sample(T, N, C, smax, il, tl, **kw):
    def make(r):
        tg = r.integers(1, C, (N, smax))
        tg[0, :2] = tg[0, 0]  # a repeated label needs a blank between
        return S((U(r, (T, N, C)), tg, np.array(il), np.array(tl)), kw)
    return make


# through log_softmax: PyTorch's CTC gradient is the logits' gradient (exact through a log_softmax)
add("ctc_loss", fn=lambda m, x, t, il, tl, **kw: F(m).ctc_loss(x.log_softmax(2) if x.dtype.is_floating_point else x,
                                                               t, il, tl, **kw),
    samples=fixed(_ctc_sample(6, 2, 4, 3, [6, 5], [3, 2]),
                  _ctc_sample(7, 3, 5, 3, [7, 5, 6], [3, 0, 2], reduction="none"),
                  _ctc_sample(5, 2, 4, 3, [5, 4], [3, 1], reduction="sum", blank=3)),
    gradgrad=False, fd_tol=None,
    notes="finite differences (first order, reverse and forward) in test_nn_breadth.py: the backward, as "
          "PyTorch's, is not differentiable again, so the registry's second-order checks do not apply")
add("ctc_loss_backward", fn=_reg("ctc_loss_backward"), oracle=False, grad=False,
    samples=fixed(lambda r: S((U(r, (2,)), np.log(np.full((4, 2, 3), 1 / 3)), np.array([[1, 2], [2, 2]]),
                               np.array([4, 4]), np.array([2, 1])), {"blank": 0, "zero_infinity": False})))
op_db.NON_DIFFERENTIABLE.append("ctc_loss_backward")
op_db.INTERNAL.append("ctc_loss_backward")

# ----------------------------------------------------------------------------- attention, fused losses


def _mha(m, q, k, v, ipw, ipb, opw, opb, **kw):
    return F(m).multi_head_attention_forward(q, k, v, 4, 2, ipw, ipb, None, None, False, 0.0, opw, opb, **kw)


add("softmax", "multi_head_attention_forward", fn=_mha,
    samples=fixed(lambda r: S((U(r, (3, 2, 4)), U(r, (5, 2, 4)), U(r, (5, 2, 4)), U(r, (12, 4)), U(r, (12,)),
                               U(r, (4, 4)), U(r, (4,))), {"attn_mask": None}),
                  lambda r: S((U(r, (3, 4)), U(r, (5, 4)), U(r, (5, 4)), U(r, (12, 4)), U(r, (12,)),
                               U(r, (4, 4)), U(r, (4,))), {"average_attn_weights": False}, desc="unbatched")),
    fd_tol=1e-4)
add("linear", "linear_cross_entropy",
    fn=lambda m, x, w, t, *b, **kw: F(m).linear_cross_entropy(x, w, t, linear_bias=b[0] if b else None, **kw),
    samples=fixed(lambda r: S((U(r, (4, 5)), U(r, (3, 5)), op_db.ints(r, (4,), 0, 3), U(r, (3,)))),
                  lambda r: S((U(r, (4, 5)), U(r, (3, 5)), op_db.ints(r, (4,), 0, 3)), {"label_smoothing": 0.1,
                                                                                        "reduction": "sum"})))
