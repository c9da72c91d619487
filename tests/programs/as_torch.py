"""Run a PyTorch program with ``import torch`` resolving to ember: ``python as_torch.py PROGRAM [ARGS]``.

Every ``torch`` / ``torch.<sub>`` import (and ``functorch``) is answered with the matching ember
module, so the program's text stays exactly as it runs on PyTorch."""
import importlib
import importlib.abc
import importlib.util
import runpy
import sys


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class EmberAsTorch(importlib.abc.MetaPathFinder):
    ALIASES = {"torch": "ember", "functorch": "ember.functorch"}

    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        if head not in self.ALIASES:
            return None
        real = self.ALIASES[head] + ("." + rest if rest else "")
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name != real:
                raise
            raise ModuleNotFoundError(f"No module named {fullname!r} (ember has no {real!r})", name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _Loader(module))


def install():
    sys.meta_path.insert(0, EmberAsTorch())


if __name__ == "__main__":
    install()
    program = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(program, run_name="__main__")
