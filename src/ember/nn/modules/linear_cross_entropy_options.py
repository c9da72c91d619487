"""LinearCrossEntropyOptions (torch.nn.LinearCrossEntropyOptions): the settings of PyTorch's chunked
linear_cross_entropy. ember accepts and checks them and evaluates the reference definition
(linear then cross_entropy), which gives the same result; chunking only saves memory."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    allow_retain_graph: bool = False
    batch_chunk_size: "int | None" = None
    chunking_method: "str | None" = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        b = self.batch_chunk_size
        if b is not None and (not isinstance(b, int) or isinstance(b, bool) or b <= 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {b}")
        m = self.chunking_method
        if m is not None and m != "auto" and not (isinstance(m, str) and m.split(":")[0] in ("aspect_ratio",)):
            raise ValueError(f"invalid chunking_method: {m!r}")
        if self.acc_policy not in ("accurate", "balanced", "compact", "auto"):
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
