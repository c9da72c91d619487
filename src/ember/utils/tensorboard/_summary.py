"""Summary protocol buffers from ember tensors and NumPy arrays: scalars, histograms, images, text,
graphs (from an FX trace) and hyper-parameters, in the layout TensorBoard's plugins read."""
import io
import math

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary, HistogramProto, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.versions_pb2 import VersionDef


def to_numpy(x, what):
    """An ember tensor, NumPy array or Python number as a NumPy array (detached)."""
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        return np.asarray(x.detach().numpy())
    if isinstance(x, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return np.asarray(x)
    raise TypeError(f"SummaryWriter.{what}: expected a tensor, a NumPy array or a number, got {type(x).__name__}")


def scalar(tag, value, new_style=False, double_precision=False):
    v = to_numpy(value, "add_scalar")
    if v.size != 1:
        raise ValueError(f"SummaryWriter.add_scalar({tag!r}): expected a single value, got shape {list(v.shape)}")
    v = float(v.reshape(()))
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=v)])
    dtype = "DT_DOUBLE" if double_precision else "DT_FLOAT"
    tensor = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(),
                         **({"double_val": [v]} if double_precision else {"float_val": [v]}))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=meta)])


def _tensorflow_bucket_limits():
    """TensorFlow's default histogram buckets: limits growing by 10% from 1e-12 to 1e20, mirrored
    for negative values, with 0 in the middle."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return np.array([-x for x in reversed(pos)] + [0.0] + pos + [np.finfo(np.float64).max])


def histogram(tag, values, bins="tensorflow", max_bins=None):
    v = to_numpy(values, "add_histogram").astype(np.float64).ravel()
    if v.size == 0:
        raise ValueError(f"SummaryWriter.add_histogram({tag!r}): the input has no values")
    if not np.isfinite(v).all():
        raise ValueError(f"SummaryWriter.add_histogram({tag!r}): the input has non-finite values")
    if isinstance(bins, str) and bins == "tensorflow":
        limits = _tensorflow_bucket_limits()
        counts = np.bincount(np.searchsorted(limits, v, side="left"), minlength=len(limits))[:len(limits)]
        keep = np.nonzero(counts)[0]
        lo, hi = max(keep[0] - 1, 0), keep[-1]  # one empty bucket before the first value, as PyTorch writes
        limits, counts = limits[lo:hi + 1], counts[lo:hi + 1]
    else:
        counts, edges = np.histogram(v, bins=bins)
        if max_bins is not None and len(counts) > max_bins:
            f = -(-len(counts) // max_bins)
            pad = (-len(counts)) % f
            counts = np.pad(counts, (0, pad)).reshape(-1, f).sum(1)
            edges = np.concatenate([edges[:-1:f], edges[-1:]])
        # every edge is a limit: the first bucket (below the lowest edge) is empty, as in PyTorch's files
        limits, counts = edges, np.concatenate([[0], counts])
    return Summary(value=[Summary.Value(tag=tag, histo=HistogramProto(
        min=float(v.min()), max=float(v.max()), num=int(v.size), sum=float(v.sum()),
        sum_squares=float(np.dot(v, v)), bucket_limit=[float(x) for x in limits],
        bucket=[float(c) for c in counts]))])


def _to_hwc(img, dataformats, tag):
    img = to_numpy(img, "add_image")
    fmt = dataformats.upper()
    if len(fmt) != img.ndim or len(set(fmt)) != len(fmt) or set(fmt) - set("NCHW"):
        raise ValueError(f"SummaryWriter.add_image({tag!r}): dataformats {dataformats!r} does not describe "
                         f"an image of shape {list(img.shape)}")
    if "N" in fmt:
        raise ValueError(f"SummaryWriter.add_image({tag!r}): one image expected; use add_images for a batch")
    if "C" not in fmt:
        img, fmt = img[..., None], fmt + "C"
    img = np.transpose(img, [fmt.index(c) for c in "HWC"])
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if img.shape[2] not in (3, 4):
        raise ValueError(f"SummaryWriter.add_image({tag!r}): expected 1, 3 or 4 channels, got {img.shape[2]}")
    if img.dtype != np.uint8:  # floats in [0, 1], as PyTorch takes them
        img = (np.clip(img.astype(np.float64), 0, 1) * 255 + 0.5).astype(np.uint8)
    return img


def image(tag, img, dataformats="CHW"):
    from PIL import Image  # (a dependency of the tensorboard package)
    hwc = _to_hwc(img, dataformats, tag)
    buf = io.BytesIO()
    Image.fromarray(hwc).save(buf, format="PNG")
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(
        height=hwc.shape[0], width=hwc.shape[1], colorspace=hwc.shape[2], encoded_image_string=buf.getvalue()))])


def images(tag, imgs, dataformats="NCHW"):
    """A batch as one grid image (rows of up to 8), as PyTorch's add_images shows it."""
    arr = to_numpy(imgs, "add_images")
    fmt = dataformats.upper()
    if "N" not in fmt or len(fmt) != arr.ndim:
        raise ValueError(f"SummaryWriter.add_images({tag!r}): dataformats {dataformats!r} does not describe "
                         f"a batch of shape {list(arr.shape)}")
    n = arr.shape[fmt.index("N")]
    per = [_to_hwc(np.take(arr, i, axis=fmt.index("N")), fmt.replace("N", ""), tag) for i in range(n)]
    cols = min(8, n)
    rows = math.ceil(n / cols)
    h, w, c = per[0].shape
    grid = np.zeros((rows * h, cols * w, c), np.uint8)
    for i, im in enumerate(per):
        r, q = divmod(i, cols)
        grid[r * h:(r + 1) * h, q * w:(q + 1) * w] = im
    return image(tag, grid, "HWC")


def text(tag, text_string):
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text", content=b"{}"))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


def graph(model, example_inputs):
    """A GraphDef of the model's FX trace: one node per graph node (its op and target), edges from
    its inputs, shapes from running the example inputs through ShapeProp when given."""
    from ... import fx
    from ...fx.passes.shape_prop import ShapeProp
    gm = fx.symbolic_trace(model)
    if example_inputs is not None:
        args = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        ShapeProp(gm).propagate(*args)
    nodes = []
    for n in gm.graph.nodes:
        inputs = [a.name for a in n.all_input_nodes]
        attrs = {"target": AttrValue(s=str(getattr(n.target, "__name__", n.target)).encode())}
        meta = n.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(
                dim=[TensorShapeProto.Dim(size=int(d)) for d in meta.shape])]))
            attrs["dtype"] = AttrValue(s=str(meta.dtype).encode())
        op = n.op if n.op in ("placeholder", "output", "get_attr") else f"{n.op}:{attrs['target'].s.decode()}"
        nodes.append(NodeDef(name=n.name, op=op, input=inputs, attr=attrs))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
