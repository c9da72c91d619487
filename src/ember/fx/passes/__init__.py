"""Graph passes: ShapeProp (shapes and dtypes on each node), node-by-node profiling."""
from . import shape_prop, profiling  # noqa: F401
