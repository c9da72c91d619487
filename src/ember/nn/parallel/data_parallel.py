"""nn.DataParallel as PyTorch's build answers without GPUs: the wrapped module runs in this process
on the inputs as given (no device to scatter to); parameters and state-dict keys sit under
``module.`` as in PyTorch, so checkpoints move between the two."""
from ..modules.module import Module


class DataParallel(Module):
    """Runs the module in-process on the CPU (no replicas).

    Differences from PyTorch: device_ids given raise AssertionError ("Torch not compiled with CUDA
    enabled"), where PyTorch's CPU-only build ignores them and calls the module directly, as both do
    without device_ids."""
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if device_ids:
            raise AssertionError("Torch not compiled with CUDA enabled: ember runs on the CPU, "
                                 f"DataParallel cannot use device_ids={list(device_ids)}")
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form: ``module(*inputs)`` on the CPU."""
    if device_ids:
        raise AssertionError("Torch not compiled with CUDA enabled: ember runs on the CPU")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
