"""torch.return_types: the named tuples ops return (fields by name and by position)."""
from collections import namedtuple

frexp = namedtuple("frexp", ["mantissa", "exponent"])
mode = namedtuple("mode", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
histogram = namedtuple("histogram", ["hist", "bin_edges"])
histogramdd = namedtuple("histogramdd", ["hist", "bin_edges"])
