"""ONNX export from an FX trace.

The model (in eval mode) is traced with ``fx.symbolic_trace``, the example inputs run through
``ShapeProp`` so that every node has its shape and dtype, and each node becomes ONNX nodes:
modules by their type, functions and methods by what they compute. Parameters and buffers become
initializers. Anything without a conversion is an error naming the node, never a silently wrong
graph; the test suite runs the exported files in onnxruntime against ember's own outputs."""
import operator
import os

import numpy as np

_export_depth = [0]


class OnnxExporterError(RuntimeError):
    """A model that cannot be exported: the message names the graph node and what it calls."""


def is_in_onnx_export():
    return _export_depth[0] > 0


_MIN_OPSET = 17  # LayerNormalization


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamic_axes=None, export_params=True, do_constant_folding=True,
           keep_initializers_as_inputs=False, dynamo=True, external_data=True, dynamic_shapes=None,
           training=None, **unused):
    """Export ``model`` run on ``args`` to the ONNX file ``f`` (a path or a writable binary file);
    returns the ``onnx.ModelProto``. ``dynamic_axes`` ({input or output name: {axis: name}} or
    {name: [axes]}) marks axes as symbolic. Opsets 17 and above are written (default 17)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("ember.onnx.export needs the onnx package: pip install 'ember[onnx]'") from None
    from .. import fx
    from ..fx.passes.shape_prop import ShapeProp
    from .._tensor import Tensor
    if kwargs:
        raise OnnxExporterError("ember.onnx.export: keyword inputs (kwargs=) are not supported; pass the "
                                "inputs positionally in args")
    if not export_params:
        raise OnnxExporterError("ember.onnx.export: export_params=False is not supported (the weights are "
                                "always written as initializers)")
    opset = _MIN_OPSET if opset_version is None else int(opset_version)
    import onnx.defs
    if not _MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise OnnxExporterError(f"ember.onnx.export: opset_version {opset} is not supported: ember writes "
                                f"opsets {_MIN_OPSET} to {onnx.defs.onnx_opset_version()}")
    if isinstance(args, Tensor) or not isinstance(args, (tuple, list)):
        args = (args,)
    args = tuple(args)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    _export_depth[0] += 1
    try:
        gm = fx.symbolic_trace(model)
        ShapeProp(gm).propagate(*args)
        proto = _Converter(gm, args, opset, input_names, output_names, dynamic_axes).convert()
    finally:
        _export_depth[0] -= 1
        if was_training:
            model.train()
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return proto


def _np_dtype_to_onnx(dt):
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def _pair(v, n):
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * n


class _Converter:
    def __init__(self, gm, args, opset, input_names, output_names, dynamic_axes):
        self.gm = gm
        self.args = args
        self.opset = opset
        self.input_names = list(input_names or [])
        self.output_names = list(output_names or [])
        self.dynamic_axes = dynamic_axes or {}
        self.nodes = []
        self.inits = {}
        self.names = {}        # fx node -> ONNX value name
        self.consts = 0
        self.modules = dict(gm.named_modules())
        self.static = set()     # nodes that compute Python sizes, not tensors

    # ------------------------------------------------------------------ helpers
    def fail(self, n, why):
        target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", repr(n.target))
        raise OnnxExporterError(f"ember.onnx.export: node {n.name!r} ({n.op} {target}): {why}")

    def add(self, op, inputs, outputs=None, **attrs):
        from onnx import helper
        outputs = outputs or [self.fresh(op.lower())]
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs), **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def fresh(self, base):
        self.consts += 1
        return f"{base}_{self.consts}"

    def init(self, base, arr):
        from onnx import numpy_helper
        name = self.fresh(base)
        self.inits[name] = numpy_helper.from_array(np.ascontiguousarray(arr), name)
        return name

    def const_i64(self, values):
        return self.init("const", np.asarray(values, np.int64))

    def weight(self, t, base):
        """An initializer for a parameter or buffer (shared when the same tensor is used twice)."""
        key = ("w", id(t))
        if key not in self.names:
            self.names[key] = self.init(base.replace(".", "_"), t.detach().numpy())
        return self.names[key]

    def meta(self, n):
        m = n.meta.get("tensor_meta")
        if m is None or not hasattr(m, "shape"):
            self.fail(n, "its value is not a single tensor (ember exports tensor-valued nodes)")
        return m

    def value(self, n, a):
        """The ONNX name of a node argument: a graph value, or a constant for a Python number."""
        from ..fx.node import Node
        if isinstance(a, Node):
            if a in self.static:
                self.fail(n, f"its input {a.name!r} is a size read off a tensor; ember exports sizes only "
                             "where reshape/view take them")
            if a not in self.names:
                self.fail(n, f"its input {a.name!r} has no ONNX value")
            return self.names[a]
        if isinstance(a, (int, float, bool)):
            dt = self.meta(n).dtype.np if hasattr(n.meta.get("tensor_meta"), "dtype") else np.float32
            return self.init("scalar", np.asarray(a, dtype=dt))
        self.fail(n, f"an argument of type {type(a).__name__} cannot be an ONNX input")

    def axes_attr_or_input(self, op, inputs, axes, keepdims):
        if op == "ReduceSum" or self.opset >= 18:
            return self.add(op, inputs + [self.const_i64(axes)], keepdims=int(keepdims))
        return self.add(op, inputs, axes=list(axes), keepdims=int(keepdims))

    # ------------------------------------------------------------------ the walk
    def convert(self):
        from onnx import helper
        g_inputs, g_outputs = [], []
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(self.input_names) > len(placeholders):
            raise OnnxExporterError(f"ember.onnx.export: {len(self.input_names)} input_names for a model with "
                                    f"{len(placeholders)} inputs")
        for i, n in enumerate(self.gm.graph.nodes):
            if n.op == "placeholder":
                k = placeholders.index(n)
                name = self.input_names[k] if k < len(self.input_names) else n.name
                m = self.meta(n)
                g_inputs.append(helper.make_tensor_value_info(name, _np_dtype_to_onnx(m.dtype.np),
                                                              self.shape_of(name, m.shape)))
                self.names[n] = name
            elif n.op == "get_attr":
                obj = self.gm
                for part in n.target.split("."):
                    obj = getattr(obj, part)
                self.names[n] = self.weight(obj, n.target)
            elif n.op == "output":
                outs = n.args[0] if isinstance(n.args[0], (tuple, list)) else (n.args[0],)
                for j, o in enumerate(outs):
                    name = self.output_names[j] if j < len(self.output_names) else f"output_{j}"
                    src = self.value(n, o)
                    self.add("Identity", [src], [name])
                    m = self.meta(o)
                    g_outputs.append(helper.make_tensor_value_info(name, _np_dtype_to_onnx(m.dtype.np),
                                                                   self.shape_of(name, m.shape)))
            else:
                self.names[n] = self.convert_node(n)
        graph = helper.make_graph(self.nodes, type(self.gm).__name__, g_inputs, g_outputs,
                                  list(self.inits.values()))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="ember")
        return model

    def shape_of(self, name, shape):
        dyn = self.dynamic_axes.get(name, {})
        if isinstance(dyn, (list, tuple)):
            dyn = {a: f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(dyn)}
        return [dyn[i] if i in dyn else int(d) for i, d in enumerate(shape)]

    def convert_node(self, n):
        if self.is_static(n):
            # sizes read off a tensor (x.shape, x.size(0), x.dim()) are known from the trace: the
            # ops that take them (reshape/view) use the traced shapes, and they produce no ONNX value
            self.static.add(n)
            return None
        if n.op == "call_module":
            return self.module(n, self.modules[n.target])
        if n.op == "call_function":
            return self.function(n, n.target, list(n.args), dict(n.kwargs))
        if n.op == "call_method":
            return self.method(n, n.target, list(n.args), dict(n.kwargs))
        self.fail(n, "unknown node kind")

    def is_static(self, n):
        from ..fx.node import Node
        if n.op == "call_function" and n.target is getattr and n.args[1] in ("shape", "ndim"):
            return True
        if n.op == "call_method" and n.target in ("size", "dim"):
            return True
        if n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], Node):
            return n.args[0] in self.static
        return False

    # ------------------------------------------------------------------ modules
    def module(self, n, m):
        from .. import nn
        x = self.value(n, n.args[0]) if n.args else None
        if isinstance(m, (nn.Dropout, nn.Identity)) or type(m).__name__ in ("Dropout1d", "Dropout2d", "Dropout3d",
                                                                              "AlphaDropout"):
            return self.add("Identity", [x])
        if isinstance(m, nn.Linear):
            w = self.init(n.target + "_weight_t", m.weight.detach().numpy().T)
            y = self.add("MatMul", [x, w])
            return self.add("Add", [y, self.weight(m.bias, n.target + ".bias")]) if m.bias is not None else y
        if isinstance(m, (nn.Conv1d, nn.Conv2d)) or type(m).__name__ == "Conv3d":
            return self.conv(n, x, m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups,
                             m.weight.dim() - 2, n.target, getattr(m, "padding_mode", "zeros"))
        if type(m).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"):
            k = m.weight.dim() - 2
            ins = [x, self.weight(m.weight, n.target + ".weight")]
            if m.bias is not None:
                ins.append(self.weight(m.bias, n.target + ".bias"))
            return self.add("ConvTranspose", ins, strides=_pair(m.stride, k), pads=_pair(m.padding, k) * 2,
                            dilations=_pair(m.dilation, k), group=int(m.groups),
                            output_padding=_pair(m.output_padding, k))
        if type(m).__name__ in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
            c = m.num_features
            w = self.weight(m.weight, n.target + ".weight") if m.weight is not None else \
                self.init("bn_scale", np.ones(c, np.float32))
            b = self.weight(m.bias, n.target + ".bias") if m.bias is not None else \
                self.init("bn_bias", np.zeros(c, np.float32))
            if m.running_mean is None:
                self.fail(n, "BatchNorm without running statistics uses batch statistics; ONNX export needs "
                             "track_running_stats=True")
            return self.add("BatchNormalization", [x, w, b, self.weight(m.running_mean, n.target + ".running_mean"),
                                                   self.weight(m.running_var, n.target + ".running_var")],
                            epsilon=float(m.eps))
        if isinstance(m, nn.LayerNorm):
            return self.layer_norm(n, x, m.normalized_shape, m.weight, m.bias, m.eps, n.target)
        if isinstance(m, nn.Embedding):
            return self.add("Gather", [self.weight(m.weight, n.target + ".weight"), x], axis=0)
        if isinstance(m, nn.Flatten):
            return self.flatten(n, x, m.start_dim, m.end_dim)
        if type(m).__name__ in ("MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d"):
            return self.pool(n, x, type(m).__name__.startswith("Max"), m.kernel_size, m.stride, m.padding,
                             getattr(m, "dilation", 1), m.ceil_mode, getattr(m, "count_include_pad", True),
                             self.meta(n.args[0]).shape)
        if type(m).__name__ in ("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"):
            out = m.output_size
            k = len(self.meta(n.args[0]).shape) - 2
            if _pair(out, k) != [1] * k:
                self.fail(n, f"adaptive pooling to {out} has no ONNX operator (only output size 1: global pooling)")
            return self.add("GlobalAveragePool" if "Avg" in type(m).__name__ else "GlobalMaxPool", [x])
        act = self.activation_module(n, m, x)
        if act is not None:
            return act
        self.fail(n, f"no ONNX conversion for module {type(m).__name__}")

    def activation_module(self, n, m, x):
        name = type(m).__name__
        simple = {"ReLU": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Mish": "Mish", "Softsign": "Softsign",
                  "Hardswish": "HardSwish", "SELU": "Selu"}
        if name in simple:
            return self.add(simple[name], [x])
        if name == "GELU":
            return self.gelu(x, getattr(m, "approximate", "none"))
        if name == "SiLU":
            return self.add("Mul", [x, self.add("Sigmoid", [x])])
        if name == "LeakyReLU":
            return self.add("LeakyRelu", [x], alpha=float(m.negative_slope))
        if name == "ELU":
            return self.add("Elu", [x], alpha=float(m.alpha))
        if name == "ReLU6":
            return self.add("Clip", [x, self.init("lo", np.asarray(0, np.float32)),
                                     self.init("hi", np.asarray(6, np.float32))])
        if name in ("Softmax", "LogSoftmax"):
            return self.add(name, [x], axis=int(m.dim if m.dim is not None else -1))
        return None

    # ------------------------------------------------------------------ shared builders
    def conv(self, n, x, weight, bias, stride, padding, dilation, groups, k, base, padding_mode="zeros"):
        if padding_mode != "zeros":
            self.fail(n, f"padding_mode={padding_mode!r} is not exported (only 'zeros')")
        ins = [x, self.weight(weight, base + ".weight")]
        if bias is not None:
            ins.append(self.weight(bias, base + ".bias"))
        attrs = dict(strides=_pair(stride, k), dilations=_pair(dilation, k), group=int(groups),
                     kernel_shape=list(weight.shape[2:]))
        if isinstance(padding, str):  # 'same': PyTorch puts the odd element of the padding at the end
            total = [d * (kk - 1) for d, kk in zip(attrs["dilations"], attrs["kernel_shape"])] \
                if padding == "same" else [0] * k
            attrs["pads"] = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            attrs["pads"] = _pair(padding, k) * 2
        return self.add("Conv", ins, **attrs)

    def pool(self, n, x, is_max, kernel, stride, padding, dilation, ceil_mode, count_include_pad, in_shape):
        k = len(in_shape) - 2
        kernel = _pair(kernel, k)
        stride = _pair(stride if stride not in (None, ()) else kernel, k)
        attrs = dict(kernel_shape=kernel, strides=stride, pads=_pair(padding, k) * 2, ceil_mode=int(bool(ceil_mode)))
        if is_max:
            attrs["dilations"] = _pair(dilation, k)
            return self.add("MaxPool", [x], **attrs)
        if _pair(dilation, k) != [1] * k:
            self.fail(n, "dilated average pooling has no ONNX operator")
        return self.add("AveragePool", [x], count_include_pad=int(bool(count_include_pad)), **attrs)

    def layer_norm(self, n, x, normalized_shape, weight, bias, eps, base):
        shape = list(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else [normalized_shape]
        rank = len(self.meta(n.args[0]).shape)
        ins = [x, self.weight(weight, base + ".weight") if weight is not None else
               self.init("ln_scale", np.ones(shape, np.float32))]
        if bias is not None:
            ins.append(self.weight(bias, base + ".bias"))
        return self.add("LayerNormalization", ins, axis=rank - len(shape), epsilon=float(eps))

    def flatten(self, n, x, start, end):
        rank = len(self.meta(n.args[0]).shape)
        if rank and start % rank == 0 and end % rank == rank - 1:
            return self.add("Reshape", [x, self.const_i64([-1])])
        return self.reshape_to(n, x)

    def reshape_to(self, n, x, spec=None):
        """Reshape to the node's output shape; with ``spec`` (the call's own sizes) a -1 and the
        batch axis stay symbolic."""
        shape = list(spec) if spec is not None else list(self.meta(n).shape)
        if spec is None and len(shape) >= 1:
            first = n.args[0]
            from ..fx.node import Node
            if isinstance(first, Node) and len(self.meta(first).shape) and \
                    self.meta(first).shape[0] == shape[0]:
                shape[0] = 0  # ONNX: copy the batch size from the input
        return self.add("Reshape", [x, self.const_i64(shape)])

    def gelu(self, x, approximate):
        if self.opset >= 20:
            return self.add("Gelu", [x], approximate=approximate)
        if approximate == "tanh":
            c = self.init("c", np.asarray(np.sqrt(2 / np.pi), np.float32))
            k = self.init("k", np.asarray(0.044715, np.float32))
            x3 = self.add("Mul", [self.add("Mul", [x, x]), x])
            inner = self.add("Mul", [c, self.add("Add", [x, self.add("Mul", [k, x3])])])
            t = self.add("Tanh", [inner])
            one = self.init("one", np.asarray(1, np.float32))
            half = self.init("half", np.asarray(0.5, np.float32))
            return self.add("Mul", [self.add("Mul", [half, x]), self.add("Add", [one, t])])
        r2 = self.init("sqrt2", np.asarray(np.sqrt(2), np.float32))
        one = self.init("one", np.asarray(1, np.float32))
        half = self.init("half", np.asarray(0.5, np.float32))
        e = self.add("Erf", [self.add("Div", [x, r2])])
        return self.add("Mul", [self.add("Mul", [half, x]), self.add("Add", [one, e])])

    # ------------------------------------------------------------------ functions and methods
    _BINARY = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.truediv: "Div",
               operator.matmul: "MatMul", operator.pow: "Pow"}
    _UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
              "abs": "Abs", "neg": "Neg", "sin": "Sin", "cos": "Cos", "erf": "Erf", "floor": "Floor",
              "ceil": "Ceil", "reciprocal": "Reciprocal", "contiguous": "Identity", "clone": "Identity",
              "detach": "Identity", "mish": "Mish", "hardswish": "HardSwish", "selu": "Selu"}
    _BINARY_NAMES = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "matmul": "MatMul", "mm": "MatMul",
                     "bmm": "MatMul", "pow": "Pow", "maximum": "Max", "minimum": "Min"}

    def function(self, n, fn, args, kwargs):
        if fn is operator.getitem:
            return self.getitem(n, args[0], args[1])
        if fn is operator.neg:
            return self.add("Neg", [self.value(n, args[0])])
        if fn in self._BINARY:
            return self.binary(n, self._BINARY[fn], args[0], args[1])
        name = getattr(fn, "__name__", "")
        mod = getattr(fn, "__module__", "") or ""
        if not mod.startswith("ember"):
            self.fail(n, f"no ONNX conversion for the function {mod}.{name}")
        return self.named(n, name, args, kwargs)

    def method(self, n, name, args, kwargs):
        return self.named(n, name, args, kwargs)

    def named(self, n, name, args, kwargs):
        """ember functions and Tensor methods, by name (their arguments are PyTorch's)."""
        def arg(i, key, default=None):
            return args[i] if len(args) > i else kwargs.get(key, default)
        x = args[0] if args else kwargs.get("input")
        if name in self._UNARY:
            return self.add(self._UNARY[name], [self.value(n, x)])
        if name in self._BINARY_NAMES and len(args) >= 2:
            if name in ("add", "sub") and kwargs.get("alpha", 1) != 1:
                self.fail(n, "alpha != 1 is not exported")
            return self.binary(n, self._BINARY_NAMES[name], args[0], args[1])
        xv = self.value(n, x)
        if name == "gelu":
            return self.gelu(xv, kwargs.get("approximate", "none"))
        if name == "silu":
            return self.add("Mul", [xv, self.add("Sigmoid", [xv])])
        if name == "leaky_relu":
            return self.add("LeakyRelu", [xv], alpha=float(arg(1, "negative_slope", 0.01)))
        if name in ("softmax", "log_softmax"):
            return self.add("Softmax" if name == "softmax" else "LogSoftmax", [xv], axis=int(arg(1, "dim")))
        if name == "dropout":
            return self.add("Identity", [xv])
        if name == "layer_norm":
            return self.layer_norm(n, xv, arg(1, "normalized_shape"), arg(2, "weight"), arg(3, "bias"),
                                   arg(4, "eps", 1e-5), n.name)
        if name == "flatten":
            return self.flatten(n, xv, arg(1, "start_dim", 0), arg(2, "end_dim", -1))
        if name in ("view", "reshape"):
            sizes = args[1:] if len(args) > 2 or (len(args) == 2 and not isinstance(args[1], (tuple, list))) \
                else (args[1] if len(args) == 2 else kwargs.get("shape", kwargs.get("size")))
            if all(isinstance(s, int) for s in sizes):
                return self.reshape_to(n, xv, list(sizes))
            return self.reshape_to(n, xv)
        if name in ("permute",):
            dims = args[1:] if len(args) > 2 or isinstance(args[1], int) else args[1]
            return self.add("Transpose", [xv], perm=[int(d) for d in dims])
        if name in ("transpose", "t"):
            rank = len(self.meta(x).shape)
            d0, d1 = (arg(1, "dim0"), arg(2, "dim1")) if name == "transpose" else (0, 1)
            perm = list(range(rank))
            perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
            return self.add("Transpose", [xv], perm=perm)
        if name in ("mean", "sum", "amax", "amin"):
            dims = arg(1, "dim")
            keep = bool(arg(2, "keepdim", False))
            rank = len(self.meta(x).shape)
            dims = list(range(rank)) if dims is None else ([dims] if isinstance(dims, int) else list(dims))
            op = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin"}[name]
            return self.axes_attr_or_input(op, [xv], [d % rank for d in dims], keep)
        if name in ("unsqueeze", "squeeze"):
            d = arg(1, "dim")
            if d is None:
                self.fail(n, "squeeze without a dim is not exported (give the dim)")
            rank = len(self.meta(x).shape) + (1 if name == "unsqueeze" else 0)
            return self.add("Unsqueeze" if name == "unsqueeze" else "Squeeze", [xv, self.const_i64([int(d) % rank])])
        if name in ("cat", "concat", "concatenate"):
            tensors = x
            dim = arg(1, "dim", 0)
            rank = len(self.meta(n).shape)
            return self.add("Concat", [self.value(n, t) for t in tensors], axis=int(dim) % rank)
        if name in ("linear",):
            w = arg(1, "weight")
            wt = self.add("Transpose", [self.value(n, w)], perm=[1, 0])
            y = self.add("MatMul", [xv, wt])
            b = arg(2, "bias")
            return self.add("Add", [y, self.value(n, b)]) if b is not None else y
        if name in ("conv1d", "conv2d"):
            self.fail(n, "functional convolutions are exported through nn.Conv modules only")
        if name in ("relu6", "hardtanh"):
            lo, hi = (0.0, 6.0) if name == "relu6" else (float(arg(1, "min_val", -1.0)), float(arg(2, "max_val", 1.0)))
            return self.add("Clip", [xv, self.init("lo", np.asarray(lo, np.float32)),
                                     self.init("hi", np.asarray(hi, np.float32))])
        if name in ("adaptive_avg_pool2d",) and _pair(arg(1, "output_size"), 2) == [1, 1]:
            return self.add("GlobalAveragePool", [xv])
        if name in ("max_pool2d", "avg_pool2d"):
            return self.pool(n, xv, name == "max_pool2d", arg(1, "kernel_size"), arg(2, "stride", None) or
                             arg(1, "kernel_size"), arg(3, "padding", 0), 1 if name == "avg_pool2d" else
                             arg(4, "dilation", 1), kwargs.get("ceil_mode", False),
                             kwargs.get("count_include_pad", True), self.meta(x).shape)
        self.fail(n, f"no ONNX conversion for {name!r}")

    def binary(self, n, op, a, b):
        return self.add(op, [self.value(n, a), self.value(n, b)])

    def getitem(self, n, x, idx):
        from ..fx.node import Node
        if not isinstance(x, Node):
            self.fail(n, "indexing a non-tensor value")
        xv = self.value(n, x)
        idx = idx if isinstance(idx, tuple) else (idx,)
        out = xv
        axis = 0
        for it in idx:
            if it is Ellipsis:
                axis = len(self.meta(x).shape) - (len(idx) - 1 - idx.index(Ellipsis)) - sum(
                    1 for j in idx[idx.index(Ellipsis) + 1:] if j is None)
                continue
            if it is None:
                out = self.add("Unsqueeze", [out, self.const_i64([axis])])
                axis += 1
                continue
            if isinstance(it, int):
                out = self.add("Gather", [out, self.const_i64(it)], axis=axis)
                continue
            if isinstance(it, slice):
                if it != slice(None):
                    start = 0 if it.start is None else it.start
                    stop = np.iinfo(np.int64).max if it.stop is None else it.stop
                    out = self.add("Slice", [out, self.const_i64([start]), self.const_i64([stop]),
                                             self.const_i64([axis]), self.const_i64([it.step or 1])])
                axis += 1
                continue
            self.fail(n, f"indexing with {type(it).__name__} is not exported (integers, slices, None, ...)")
        return out
