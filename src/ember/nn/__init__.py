"""ember.nn: modules, parameters, functional interface, initialisers and utilities."""
from .parameter import Parameter, Buffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional, init, utils  # noqa: F401
from . import attention  # noqa: F401,E402
from . import modules  # noqa: F401
from . import parallel  # noqa: F401,E402  (torch.nn.parallel is there after a bare import)
from .parallel import DataParallel  # noqa: F401,E402
