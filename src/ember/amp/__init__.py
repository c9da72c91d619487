"""ember.amp: GradScaler (loss scaling with inf/nan-skipping steps, as torch.amp.GradScaler) and
autocast. ember has no mixed-precision dispatch, so autocast is accepted only when disabled; an
enabled autocast raises instead of silently computing in float32."""
import math
import warnings

from .. import _dispatch as D


class autocast:
    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if enabled:
            raise NotImplementedError("autocast: ember has no mixed-precision dispatch; cast the model and "
                                      "inputs with .half()/.to(dtype), or pass enabled=False")
        self.device = device_type
        self.fast_dtype = dtype
        self._enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


def is_autocast_available(device_type):
    return False


class GradScaler:
    """Multiplies the loss by ``scale`` before backward; ``step`` unscales the gradients and skips the
    optimizer step when any is inf or nan; ``update`` halves the scale after a skipped step and doubles
    it after ``growth_interval`` good ones. Disabled, every method passes through."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled and device == "cuda":
            warnings.warn("GradScaler is enabled for 'cuda', but ember has no CUDA device. Disabling.")
            enabled = False
        self._device = device
        self._enabled = enabled
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = {}  # id(optimizer) -> {"unscaled": bool, "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, D.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False})

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = 1.0 / self._scale
        found = False
        from ..autograd.grad_mode import no_grad
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    if not found:
                        s = float(p.grad.float().abs().sum())
                        found = math.isinf(s) or math.isnan(s)
        st["unscaled"] = True
        st["found_inf"] = found

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if not st["unscaled"]:
            self.unscale_(optimizer)
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, D.Tensor) else new_scale)
        elif any(st["found_inf"] for st in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
