"""ember.onnx: export a model to an ONNX file from its FX graph (``torch.onnx.export``'s role),
built with the `onnx` package (install the `onnx` extra; `onnxruntime` runs the result)."""
from ._export import export, OnnxExporterError, is_in_onnx_export  # noqa: F401

__all__ = ["export", "OnnxExporterError", "is_in_onnx_export"]
